-- Which embedders and record routers the decisions of a replay window came from (a router fitted on another
-- embedder is refused), and how many of them kept no embedding (they cannot be replayed).
with picked as (
    -- missing: not replayable (no embedding, or, in rows stored before records were checked at ingest, a torn
    -- embedding, one of another size than its router's, or a lambda no rule takes), as replay_decisions.sql
    -- leaves them out
    select d.decision_id, d.embedder_id, d.router_id,
           d.embedding is null or octet_length(d.embedding) <> 2 * coalesce(d.embedding_dim, -1)
             or not isfinite(d.lam) or d.lam < 0 or d.embedding_dim <> coalesce(rd.dim, d.embedding_dim) as missing
    from decisions as d
    left join (
        select r.router_id, any_value(len(c.center)) as dim
        from routers as r join centroids as c on c.clustering_id = r.clustering_id group by 1
    ) as rd on rd.router_id = d.router_id
    where $since is null or d.decided_at >= $since
    order by d.decided_at desc, d.decision_id desc
    limit $last
)
select embedder_id, router_id, count(*) filter (where not missing) as n, count(*) filter (where missing) as missing
from picked
group by embedder_id, router_id
order by n desc, embedder_id, router_id
