-- The logged decisions a replay re-routes, newest first: a window (decided at or after $since) or the last $last,
-- each with its outcome where one came back. The embedding is the float16 blob the record kept. A request whose
-- caller named the model (setting 'fixed by caller', the gateway) is traffic but no decision of a router: replay
-- compares routers' choices, so it is left out.
select d.decision_id, d.decided_at, d.router_id, d.embedder_id, d.cluster, d.model, d.lam, d.budget, d.setting,
       d.expected_score, d.expected_cost, d.propensity, d.explored, d.embedding, d.embedding_dim,
       o.score as outcome_score, o.cost as outcome_cost
from decisions as d
left join outcomes as o on o.decision_id = d.decision_id
left join (
    select r.router_id, any_value(len(c.center)) as dim
    from routers as r join centroids as c on c.clustering_id = r.clustering_id group by 1
) as rd on rd.router_id = d.router_id
where ($since is null or d.decided_at >= $since) and d.embedding is not null
  and d.setting is distinct from 'fixed by caller'
  -- rows stored before records were checked at ingest may hold a torn embedding or a lambda no rule takes
  and octet_length(d.embedding) = 2 * d.embedding_dim and isfinite(d.lam) and d.lam >= 0
  and (rd.dim is null or d.embedding_dim = rd.dim)
order by d.decided_at desc, d.decision_id desc
limit $last
