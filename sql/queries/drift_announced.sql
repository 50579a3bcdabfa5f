-- When drift was announced for this champion on this training data (0 or 1 rows).
select announced_at from drift_announcements
where router_id = $router_id and data_fingerprint = $data_fingerprint
