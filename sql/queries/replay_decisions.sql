-- The logged decisions a replay re-routes, newest first: a window (decided at or after $since) or the last $last,
-- each with its outcome where one came back. The embedding is the float16 blob the record kept.
select d.decision_id, d.decided_at, d.router_id, d.embedder_id, d.cluster, d.model, d.lam, d.budget, d.setting,
       d.expected_score, d.expected_cost, d.propensity, d.explored, d.embedding, d.embedding_dim,
       o.score as outcome_score, o.cost as outcome_cost
from decisions as d
left join outcomes as o on o.decision_id = d.decision_id
where ($since is null or d.decided_at >= $since) and d.embedding is not null
order by d.decided_at desc, d.decision_id desc
limit $last
