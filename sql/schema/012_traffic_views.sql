-- SQL over traffic: the decisions serving recorded (routing_decisions) and their outcomes (routing_outcomes),
-- next to what the router expected. Each comment states the grain; tests/pipeline/traffic/test_traffic_views.py checks
-- every view by hand. Costs are the per-query costs the router used (router_costs), in the logs' unit; realised
-- figures come from outcomes files and cover only the decisions that have one.

-- Grain: one row per (day, router_id, model): the decisions routed to the model that day (UTC) and their share of
-- all the day's decisions.
create or replace view traffic_by_day as
with daily as (
    select cast(decided_at as date) as day, router_id, model, count(*) as decisions,
           count(*) filter (where explored) as explored
    from decisions group by 1, 2, 3
)
select day, router_id, model, decisions, decisions / sum(decisions) over (partition by day) as share_of_day,
       explored
from daily;

-- Grain: one row per (router_id, cluster, model): the decisions of the cluster routed to the model and their share
-- of the cluster's decisions (cluster null: a kind without clusters, K-NN).
create or replace view traffic_by_cluster as
with per_cluster as (
    select router_id, cluster, model, count(*) as decisions from decisions group by 1, 2, 3
)
select router_id, cluster, model, decisions,
       decisions / sum(decisions) over (partition by router_id, cluster) as share_of_cluster
from per_cluster;

-- Grain: one row per day (UTC): the spend the router expected for the day's decisions (each chosen model's cost),
-- and, over the decisions with an observed cost (an outcome's, else the real cost the gateway recorded for the
-- call), the expected and the realised spend side by side.
create or replace view traffic_spend_by_day as
select cast(d.decided_at as date) as day, count(*) as decisions,
       sum(c.cost) as expected_spend,
       count(coalesce(o.cost, d.cost)) as decisions_with_cost,
       sum(c.cost) filter (where coalesce(o.cost, d.cost) is not null) as expected_spend_with_cost,
       sum(coalesce(o.cost, d.cost)) as realized_spend,
       sum(coalesce(o.cost, d.cost)) / nullif(sum(c.cost) filter (where coalesce(o.cost, d.cost) is not null), 0)
           as realized_over_expected
from decisions as d
left join router_costs as c on c.router_id = d.router_id and c.model = d.model
left join outcomes as o on o.decision_id = d.decision_id
group by 1;

-- Grain: one row per (router_id, model, cluster) with at least one outcome: the realised score of the decisions
-- routed there (mean of the observed scores, with a 95% normal interval clipped to [0, 1]) next to the score the
-- router expected (1 - Psi's measured loss of the cell, its Wilson interval; for a kind without clusters, the mean
-- expected_score its records carry). The calibration of the router on its own traffic.
create or replace view realized_quality as
with observed as (
    select d.router_id, d.model, d.cluster, count(*) as n_outcomes, avg(o.score) as realized_score,
           stddev_samp(o.score) as sd, avg(d.expected_score) as recorded_expected
    from outcomes as o join decisions as d on d.decision_id = o.decision_id
    group by 1, 2, 3
)
select ob.router_id, ob.model, ob.cluster, ob.n_outcomes, ob.realized_score,
       greatest(ob.realized_score - 1.96 * coalesce(ob.sd, 0) / sqrt(ob.n_outcomes), 0) as realized_lo,
       least(ob.realized_score + 1.96 * coalesce(ob.sd, 0) / sqrt(ob.n_outcomes), 1) as realized_hi,
       coalesce(1 - p.loss, ob.recorded_expected) as expected_score,
       1 - p.error_hi as expected_lo,
       1 - p.error_lo as expected_hi,
       ob.realized_score - coalesce(1 - p.loss, ob.recorded_expected) as realized_minus_expected
from observed as ob
left join psi as p on p.router_id = ob.router_id and p.model = ob.model and p.cluster = ob.cluster;

-- Grain: one row per (day, router_id): what the day's routed traffic cost against sending every decision to the
-- router's best single model (highest validation score in its pool, as publication_models computes it), and the
-- expected score of both on the same prompts' clusters. savings = 1 - routed_cost / best_model_cost.
create or replace view traffic_savings as
with scores as (
    select psi.router_id, psi.model, sum(s.share * (1 - psi.loss)) as val_score
    from psi join cluster_shares as s on s.router_id = psi.router_id and s.cluster = psi.cluster
    where psi.router_id in (select distinct router_id from decisions)
    group by 1, 2
),
best as (
    select router_id, arg_max(model, val_score) as best_model from scores group by 1
),
per_decision as (
    select cast(d.decided_at as date) as day, d.router_id, b.best_model, c.cost as routed_cost,
           cb.cost as best_cost, 1 - pc.loss as routed_expected, 1 - pb.loss as best_expected
    from decisions as d
    join best as b on b.router_id = d.router_id
    left join router_costs as c on c.router_id = d.router_id and c.model = d.model
    left join router_costs as cb on cb.router_id = d.router_id and cb.model = b.best_model
    left join psi as pc on pc.router_id = d.router_id and pc.model = d.model and pc.cluster = d.cluster
    left join psi as pb on pb.router_id = d.router_id and pb.model = b.best_model and pb.cluster = d.cluster
)
select day, router_id, best_model, count(*) as decisions, sum(routed_cost) as routed_cost,
       sum(best_cost) as best_model_cost, 1 - sum(routed_cost) / nullif(sum(best_cost), 0) as savings,
       avg(routed_expected) as routed_expected_score, avg(best_expected) as best_model_expected_score
from per_decision
group by 1, 2, 3;

-- Grain: one row per (router_id, cluster) of a router that served traffic: the cluster's share of the traffic
-- against its share of the training prompts the router's clusters were fitted on.
create or replace view traffic_cluster_mix as
with traffic as (
    select router_id, cluster, count(*) as decisions from decisions where cluster is not null group by 1, 2
),
training as (
    select r.router_id, a.cluster, count(*) as training_prompts
    from routers as r
    join cluster_assignments as a on a.clustering_id = r.clustering_id
    join prompt_splits as s on s.prompt_id = a.prompt_id and s.split = 'train'
    where r.router_id in (select router_id from traffic)
    group by 1, 2
)
select coalesce(t.router_id, g.router_id) as router_id, coalesce(t.cluster, g.cluster) as cluster,
       coalesce(t.decisions, 0) as decisions,
       coalesce(t.decisions, 0) / sum(coalesce(t.decisions, 0)) over w as traffic_share,
       coalesce(g.training_prompts, 0) as training_prompts,
       coalesce(g.training_prompts, 0) / nullif(sum(coalesce(g.training_prompts, 0)) over w, 0) as training_share,
       coalesce(t.decisions, 0) / sum(coalesce(t.decisions, 0)) over w
         - coalesce(coalesce(g.training_prompts, 0) / nullif(sum(coalesce(g.training_prompts, 0)) over w, 0), 0)
         as share_difference
from traffic as t full join training as g on g.router_id = t.router_id and g.cluster = t.cluster
window w as (partition by coalesce(t.router_id, g.router_id));

-- traffic_drift reads the embeddings, a per-connection view over the Parquet dataset: it is created with it
-- (sql/connection/traffic_drift.sql, store.embeddings.expose_view), not here.

-- Grain: one row per model that answered at least one call in the request path (the gateway's attempts): the
-- latency of its successful calls (median, 90th percentile, mean, in seconds), the share of its calls that failed,
-- and the mean time to the first token of the requests it answered. A failed call's latency says how long the
-- failure took, not how fast the model answers, so only successful calls count. `uniroute route --max-latency`
-- reads the median over the traffic window (sql/queries/model_latency_recent.sql).
create or replace view model_latency as
with calls as (
    select
        d.decision_id,
        struct_extract(a.call, 'model') as model,
        struct_extract(a.call, 'error') as error,
        struct_extract(a.call, 'latency_ms') as latency_ms
    from decisions as d, unnest(d.attempts) as a (call)
),
first_tokens as (
    select answered_by as model, avg(ttft_ms) / 1000 as ttft_mean_s
    from decisions where answered_by is not null and ttft_ms is not null
    group by 1
)
select c.model,
       count(*) filter (where c.error is null) as calls,
       count(*) filter (where c.error is not null) as failed_calls,
       count(*) filter (where c.error is not null) / count(*) as failure_share,
       quantile_cont(c.latency_ms, 0.5) filter (where c.error is null) / 1000 as latency_p50_s,
       quantile_cont(c.latency_ms, 0.9) filter (where c.error is null) / 1000 as latency_p90_s,
       avg(c.latency_ms) filter (where c.error is null) / 1000 as latency_mean_s,
       t.ttft_mean_s
from calls as c left join first_tokens as t on t.model = c.model
group by c.model, t.ttft_mean_s;

-- Grain: one row per (router_id, cluster, model) with at least 20 successful calls there: the model's latency on
-- that cluster's prompts (median, 90th percentile, in seconds) beside its latency over all clusters, since the
-- length of an answer, and so its latency, follows the kind of prompt. Fewer calls than that would make a
-- cluster's median swing with one slow answer, so such cells are left out rather than shown noisy.
create or replace view model_latency_by_cluster as
with calls as (
    select
        d.router_id,
        d.cluster,
        struct_extract(a.call, 'model') as model,
        struct_extract(a.call, 'latency_ms') as latency_ms
    from decisions as d, unnest(d.attempts) as a (call)
    where a.call.error is null and d.cluster is not null
)
select c.router_id, c.cluster, c.model, count(*) as calls,
       quantile_cont(c.latency_ms, 0.5) / 1000 as latency_p50_s,
       quantile_cont(c.latency_ms, 0.9) / 1000 as latency_p90_s,
       any_value(m.latency_p50_s) as model_latency_p50_s
from calls as c join model_latency as m on m.model = c.model
group by 1, 2, 3
having count(*) >= 20;
