-- The newest publication (0 or 1 rows).
select version, router_id, embedder_id, pool, fingerprint, checksum, path, created_at
from publications order by created_at desc, version desc limit 1
