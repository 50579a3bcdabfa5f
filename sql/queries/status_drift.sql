-- When drift was last announced for a router (0 or 1 rows; pipeline/traffic/drift.py announces once per champion and
-- training data), for `uniroute status`. A store not yet upgraded to drift_announcements has no such table: the
-- caller asks for it first (store_has_table).
select max(announced_at) as announced_at from drift_announcements where router_id = $router_id
having count(*) > 0
