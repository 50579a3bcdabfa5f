-- Every model the pairwise file gives a valid battle for, new or already stored. Needs ingest_models and
-- ingest_pair_candidates.
select distinct m.model
from (
    select aid as mid from ingest_pair_candidates
    union
    select bid as mid from ingest_pair_candidates
) as c
join ingest_models as m on m.mid = c.mid
order by m.model
