-- Which embedders and record routers the decisions of a replay window came from (a router fitted on another
-- embedder is refused), and how many of them kept no embedding (they cannot be replayed).
with picked as (
    select d.decision_id, d.embedder_id, d.router_id, d.embedding is null as missing
    from decisions as d
    where $since is null or d.decided_at >= $since
    order by d.decided_at desc, d.decision_id desc
    limit $last
)
select embedder_id, router_id, count(*) filter (where not missing) as n, count(*) filter (where missing) as missing
from picked
group by embedder_id, router_id
order by n desc, embedder_id, router_id
