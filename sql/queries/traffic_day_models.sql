-- A day's traffic per model (UTC day $day): decisions, share, the spend the router expected, the realised spend
-- and quality where outcomes exist, and the score Psi expected for those decisions' cells.
-- Grain: one row per model routed to that day.
select d.model, count(*) as decisions, count(*) / sum(count(*)) over () as share,
       sum(c.cost) as expected_spend, sum(o.cost) as realized_spend, count(o.score) as outcomes,
       avg(o.score) as realized_score, avg(1 - p.loss) filter (where o.score is not null) as expected_score
from decisions as d
left join router_costs as c on c.router_id = d.router_id and c.model = d.model
left join outcomes as o on o.decision_id = d.decision_id
left join psi as p on p.router_id = d.router_id and p.model = d.model and p.cluster = d.cluster
where cast(d.decided_at as date) = $day
group by d.model
order by decisions desc, d.model
