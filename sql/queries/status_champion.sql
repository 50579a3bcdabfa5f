-- The champion (0 or 1 rows) for `uniroute status`: id, kind, K or k, validation Area, how and when it became the
-- champion (written promoted: build, onboard, retire; or chosen again by a rollback), and why it was written.
select r.router_id, r.kind, r.k, r.val_area, h.how as origin, r.parent_id, h.became_at as created_at, r.reason
from routers as r
join (select router_id, how, became_at from champion_history order by became_at desc, router_id desc limit 1) as h
    using (router_id)
