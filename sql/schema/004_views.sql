-- Views over routing results: what users query with `uniroute sql`. Each comment states the grain.

-- Grain: one row: the champion, the router version that routes and gets published (the newest promoted version,
-- or the one a later rollback chose: champion_history).
create or replace view champion_router as
select r.* exclude (router) from routers as r
join (select router_id from champion_history order by became_at desc, router_id desc limit 1) using (router_id);

-- Grain: one row per (cluster, grid, budget or lambda) of the newest publication: the model and its ranked
-- fall-backs (the rest of the pool, best first; null for a publication written before they were kept), and the
-- pool models provisional in the cluster (the evidence gate: routed there by the upper end of their interval).
create or replace view current_routing_table as
select p.version, p.router_id, r.cluster, r.grid, r.budget, r.lam, r.model, r.fallbacks, r.provisional
from published_routes as r
join (select * from publications order by created_at desc limit 1) as p on p.version = r.version;

-- Grain: one row per (grid, budget or lambda) of the newest publication: expected score and cost.
create or replace view current_budgets as
select p.version, b.grid, b.budget, b.lam, b.expected_score, b.expected_cost, b.calibration
from published_budgets as b
join (select * from publications order by created_at desc limit 1) as p on p.version = b.version;

-- Grain: one row per (model, cluster) of the champion: Psi cells as users read them. The measured error with its
-- 95% Wilson interval and its evidence (prompts), the error routing uses (shrunk toward the model's overall error
-- for count-aware Psi) and the stored flag on sparse cells. The snapshot mirror (pipeline/serving/user_sql.py
-- SNAPSHOT_VIEWS) answers with the same columns while a writer holds the store.
create or replace view model_cluster_errors as
select psi.router_id, psi.model, psi.cluster, psi.loss as error, 1 - psi.loss as accuracy, psi.n as prompts,
       psi.error_lo, psi.error_hi, psi.routing_loss as routing_error, psi.sparse
from psi join champion_router as c on c.router_id = psi.router_id;

-- Grain: one row per model: status, the cost the champion uses, validation/test accuracy, and how many
-- clusters it wins at best quality (lambda 0) in the current routing table.
create or replace view pool_leaderboard as
with scores as (
    select r.model,
           avg(r.score) filter (where s.split = 'val') as val_accuracy,
           avg(r.score) filter (where s.split = 'test') as test_accuracy,
           count(*) as results
    from results as r join prompt_splits as s on s.prompt_id = r.prompt_id
    group by r.model
), wins as (
    select model, count(*) as clusters_won_at_best_quality
    from current_routing_table where grid = 'lambda' and lam = 0 group by model
)
select m.model, m.status, c.cost as router_cost, sc.val_accuracy, sc.test_accuracy,
       coalesce(w.clusters_won_at_best_quality, 0) as clusters_won_at_best_quality, sc.results
from models as m
left join scores as sc on sc.model = m.model
left join router_costs as c on c.model = m.model and c.router_id = (select router_id from champion_router)
left join wins as w on w.model = m.model
order by sc.val_accuracy desc nulls last;

-- Grain: one row per (router version, method, curve vertex): held-out deferral curves of every build.
create or replace view deferral_curves as
select v.router_id, v.created_at, v.k, c.method, c.point, c.cost, c.score
from router_curves as c join routers as v on v.router_id = c.router_id;

-- Grain: one row per (router version, method): cost saved against always calling the best single model,
-- at equal quality (1 - QNC; null when the curve never reaches that model's quality).
create or replace view savings_vs_best_model as
select v.router_id, v.created_at, m.method, m.value as qnc,
       case when isfinite(m.value) then 1 - m.value end as saving_at_equal_quality
from router_metrics as m join routers as v on v.router_id = m.router_id
where m.metric = 'qnc';
