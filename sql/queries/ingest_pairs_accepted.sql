-- The file's new battles: candidates that are neither stored already nor in conflict with the store.
-- Needs ingest_pair_candidates (registered by uniroute.ingest) and ingest_pair_exceptions. Grain: one row per battle.
create or replace temp view ingest_pairs_accepted as
select c.*
from ingest_pair_candidates as c
anti join ingest_pair_exceptions as e on e.row_number = c.row_number
