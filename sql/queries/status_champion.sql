-- The champion (0 or 1 rows) for `uniroute status`: id, kind, K or k, validation Area, when and why.
select router_id, kind, k, val_area, origin, parent_id, created_at, reason
from routers where promoted order by created_at desc, router_id desc limit 1
