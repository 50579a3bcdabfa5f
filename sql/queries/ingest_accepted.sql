-- The file's new results: candidates that are neither stored already nor in conflict with the store.
-- Needs ingest_candidates (registered by uniroute.ingest) and ingest_exceptions. Grain: one row per new result.
create or replace temp view ingest_accepted as
select c.*
from ingest_candidates as c
anti join ingest_exceptions as e on e.pid = c.pid and e.mid = c.mid
