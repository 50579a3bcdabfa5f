-- Views for the questions routing users ask (docs/operate.md shows an example query for each). Each
-- comment states the grain. "Setting" below means a budget on the budget grid, or a normalised lambda on the
-- lambda grid (lambda times the pool's most expensive model's cost, so it compares across publications).

-- Grain: one row: the newest publication.
create or replace view current_publication as
select * from publications order by created_at desc limit 1;

-- Grain: one row per (router_id, cluster): the cluster's share of the validation prompts, weighted as the
-- published expected score and cost weigh it (routers/tables.py validation_weights: the largest count behind
-- any model's Psi cell in the cluster; equal shares when the router has no counts).
create or replace view cluster_shares as
with counts as (
    select router_id, cluster, max(n) as val_prompts from psi group by router_id, cluster
)
select router_id, cluster, val_prompts,
       case when sum(val_prompts) over per_router > 0 then val_prompts / sum(val_prompts) over per_router
            else 1.0 / count(*) over per_router end as share
from counts
window per_router as (partition by router_id);

-- Grain: one row per (version, model in the publication's pool): the cost the router uses for the model, that
-- cost over the pool's most expensive model's, and the validation score the model would get on its own.
create or replace view publication_models as
with scores as (
    select p.version, psi.model, sum(s.share * (1 - psi.loss)) as val_score
    from publications as p
    join psi on psi.router_id = p.router_id and list_contains(p.pool, psi.model)
    join cluster_shares as s on s.router_id = p.router_id and s.cluster = psi.cluster
    group by p.version, psi.model
)
select p.version, p.created_at, p.router_id, c.model, c.cost,
       c.cost / max(c.cost) over (partition by p.version) as normalised_cost,
       max(c.cost) over (partition by p.version) as max_pool_cost,
       sc.val_score
from publications as p
join router_costs as c on c.router_id = p.router_id and list_contains(p.pool, c.model)
left join scores as sc on sc.version = p.version and sc.model = c.model;

-- Grain: one row per (version, grid, setting, cluster) of every publication: the routed model and the
-- cluster's share of traffic.
create or replace view publication_routes as
with pool_cost as (select distinct version, max_pool_cost from publication_models)
select p.version, p.created_at, p.router_id, r.grid, r.budget, r.lam,
       round(r.lam * pc.max_pool_cost, 6) as normalised_lambda, r.cluster, r.model, s.share
from published_routes as r
join publications as p on p.version = r.version
join pool_cost as pc on pc.version = r.version
join cluster_shares as s on s.router_id = p.router_id and s.cluster = r.cluster;

-- Grain: one row per (version, grid, setting, model in the pool) of every publication: the share of traffic
-- (validation prompts) the model gets there and the clusters it gets; 0 and [] for a model that gets none.
create or replace view traffic_share as
with settings as (
    select distinct version, created_at, router_id, grid, budget, lam, normalised_lambda from publication_routes
), pool as (
    select version, unnest(pool) as model from publications
)
select s.version, s.created_at, s.router_id, s.grid, s.budget, s.lam, s.normalised_lambda, pool.model,
       coalesce(sum(r.share), 0) as traffic_share,
       count(r.cluster) as n_clusters,
       coalesce(list(r.cluster order by r.cluster) filter (where r.cluster is not null), []) as clusters
from settings as s
join pool on pool.version = s.version
left join publication_routes as r
    on r.version = s.version and r.grid = s.grid and r.lam = s.lam and r.model = pool.model
    and r.budget is not distinct from s.budget
group by all;

-- Grain: as traffic_share, for the newest publication only.
create or replace view current_traffic_share as
select * from traffic_share where version = (select version from current_publication);

-- Grain: one row per (version, grid, setting) of every publication: the expected validation score and cost
-- of routing there against the best single pool model (highest validation score, then cheapest).
-- cost_saving = 1 - expected cost / best model's cost (negative: routing costs more than the best model);
-- matches_best_model: routing scores at least as well. Held-out savings of each build: savings_vs_best_model.
create or replace view savings_by_budget as
with best as (
    select * from publication_models
    qualify row_number() over (partition by version order by val_score desc nulls last, normalised_cost, model) = 1
)
select b.version, p.created_at, b.grid, b.budget, round(b.lam * best.max_pool_cost, 6) as normalised_lambda,
       b.expected_score, b.expected_cost,
       best.model as best_model, best.val_score as best_model_score, best.normalised_cost as best_model_cost,
       b.expected_score - best.val_score as score_change,
       case when best.normalised_cost > 0 then 1 - b.expected_cost / best.normalised_cost end as cost_saving,
       b.expected_score >= best.val_score - 1e-9 as matches_best_model
from published_budgets as b
join publications as p on p.version = b.version
join best on best.version = b.version;

-- Grain: one row per (router_id, model) where the router routes a model that its nightly build (the ancestor
-- without a parent) did not: the model was onboarded since that build, by `onboarded_by`.
create or replace view onboarded_models as
with recursive lineage (router_id, ancestor_id, depth) as (
    select router_id, router_id, 0 from routers
    union all
    select l.router_id, r.parent_id, l.depth + 1
    from lineage as l join routers as r on r.router_id = l.ancestor_id
    where r.parent_id is not null
), builds as (
    select l.router_id, l.ancestor_id as build_id
    from lineage as l join routers as r on r.router_id = l.ancestor_id
    where r.parent_id is null
), added as (
    select r.router_id, b.build_id, unnest(r.models) as model
    from routers as r join builds as b on b.router_id = r.router_id
), first_with as (   -- the oldest router of the lineage that routes the model: the one that onboarded it
    select a.router_id, a.model, arg_max(l.ancestor_id, l.depth) as onboarded_by
    from added as a
    join lineage as l on l.router_id = a.router_id
    join routers as r on r.router_id = l.ancestor_id
    where list_contains(r.models, a.model)
    group by a.router_id, a.model
)
select a.router_id, a.model, a.build_id, f.onboarded_by, o.created_at as onboarded_at
from added as a
join routers as build on build.router_id = a.build_id
join first_with as f on f.router_id = a.router_id and f.model = a.model
join routers as o on o.router_id = f.onboarded_by
where not list_contains(build.models, a.model);

-- Grain: one row per (version, onboarded model, grid, setting) of every publication whose router routes a
-- model onboarded since its build: where (which clusters, what share of traffic) the newcomer takes traffic.
create or replace view onboarded_traffic as
select t.version, t.created_at, t.router_id, t.model, o.onboarded_by, o.onboarded_at,
       t.grid, t.budget, t.normalised_lambda, t.traffic_share, t.n_clusters, t.clusters
from traffic_share as t
join onboarded_models as o on o.router_id = t.router_id and o.model = t.model;

-- Grain: one row per (from_version, to_version, grid, setting, model) for every two publications (from the
-- older to the newer) where the model's traffic changed: joined or left the pool, its share changed, or (same
-- clusters only) it gained or lost clusters. consecutive: no publication in between.
create or replace view publication_diff as
with pubs as (
    select p.version, p.created_at, r.clustering_id, lead(p.version) over (order by p.created_at) as next_version
    from publications as p join routers as r on r.router_id = p.router_id
), pairs as (
    select a.version as from_version, b.version as to_version, b.version = a.next_version as consecutive,
           a.clustering_id = b.clustering_id as same_clusters
    from pubs as a join pubs as b on a.created_at < b.created_at
), shares as (
    select *, coalesce(budget, normalised_lambda) as setting from traffic_share
), before as (
    select pr.*, s.grid, s.budget, s.normalised_lambda, s.setting, s.model, s.traffic_share, s.clusters
    from pairs as pr join shares as s on s.version = pr.from_version
), after as (
    select pr.*, s.grid, s.budget, s.normalised_lambda, s.setting, s.model, s.traffic_share, s.clusters
    from pairs as pr join shares as s on s.version = pr.to_version
), joined as (
    select coalesce(b.from_version, a.from_version) as from_version,
           coalesce(b.to_version, a.to_version) as to_version,
           coalesce(b.consecutive, a.consecutive) as consecutive,
           coalesce(b.same_clusters, a.same_clusters) as same_clusters,
           coalesce(b.grid, a.grid) as grid, coalesce(b.budget, a.budget) as budget,
           coalesce(a.normalised_lambda, b.normalised_lambda) as normalised_lambda,
           coalesce(b.model, a.model) as model,
           case when b.model is null then 'added' when a.model is null then 'removed' end as pool_change,
           coalesce(b.traffic_share, 0) as share_before, coalesce(a.traffic_share, 0) as share_after,
           coalesce(b.clusters, []) as clusters_before, coalesce(a.clusters, []) as clusters_after
    from before as b
    full outer join after as a
        on a.from_version = b.from_version and a.to_version = b.to_version and a.grid = b.grid
        and a.setting = b.setting and a.model = b.model
)
select from_version, to_version, consecutive, same_clusters, grid, budget, normalised_lambda, model, pool_change,
       share_before, share_after, share_after - share_before as share_change,
       case when same_clusters then list_filter(clusters_after, lambda c: not list_contains(clusters_before, c))
       end as clusters_gained,
       case when same_clusters then list_filter(clusters_before, lambda c: not list_contains(clusters_after, c))
       end as clusters_lost
from joined
where pool_change is not null or abs(share_after - share_before) > 1e-9
   or (same_clusters and list_sort(clusters_before) <> list_sort(clusters_after));

-- Grain: one row per (day, router_id, model) of the routing log (`uniroute route --log`): the decisions
-- routed to the model that day and their share of the day's decisions.
create or replace view routing_decisions_by_day as
with daily as (
    select cast(date_trunc('day', routed_at) as date) as day, router_id, model,
           count(*) as decisions, count(distinct batch_id) as batches,
           min(routed_at) as first_routed_at, max(routed_at) as last_routed_at
    from routing_log
    group by 1, 2, 3
)
select day, router_id, model, decisions, decisions / sum(decisions) over (partition by day) as share_of_day,
       batches, first_routed_at, last_routed_at
from daily;

-- Grain: one row per (router_id, model, cluster) of every router version: the validation evidence behind the
-- model's Psi cell. val_answers = the model's validation results in the cluster; cluster_val_prompts = the
-- cluster's validation prompts (its weight); uses_fallback: no evidence, so the cell routes by the pool prior
-- (the pool's loss in the cluster weighed against the model's overall loss by its answers; routers/cluster/psi.py).
create or replace view model_evidence as
select psi.router_id, psi.model, psi.cluster, psi.loss as error, psi.n as val_answers,
       s.val_prompts as cluster_val_prompts,
       case when s.val_prompts > 0 then psi.n / s.val_prompts end as coverage,
       psi.n = 0 as uses_fallback
from psi join cluster_shares as s on s.router_id = psi.router_id and s.cluster = psi.cluster;
