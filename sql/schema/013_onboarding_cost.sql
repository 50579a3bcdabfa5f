-- What onboarding a model cost and what it bought (issue: fewer answers to onboard a model).

-- Grain: one row per (onboarding router version, model it added or refreshed): answers_used = the model's
-- validation answers behind its Psi cells in that version; answers_cost = their logged cost (results ingested up
-- to the onboarding; null where none has a cost); clusters_answered of clusters; mean_interval_width = the
-- traffic-weighted width of the 95% intervals of its cells (cluster_shares weights; null in versions written
-- before intervals were stored). A model is counted in the version whose cells for it differ from the parent's.
create or replace view onboarding_cost as
with onboardings as (
    select router_id, parent_id, created_at from routers where origin = 'onboard'
), cells as (
    select o.router_id, o.created_at, c.model, c.cluster, c.n, c.error_lo, c.error_hi, pc.n as parent_n
    from onboardings as o
    join psi as c on c.router_id = o.router_id
    left join psi as pc on pc.router_id = o.parent_id and pc.model = c.model and pc.cluster = c.cluster
), changed as (
    select router_id, model from cells group by router_id, model
    having bool_or(parent_n is null or parent_n <> n)
), bought as (
    select c.router_id, c.created_at, c.model, sum(c.n)::bigint as answers_used,
           count(*) filter (where c.n > 0) as clusters_answered, count(*) as clusters,
           sum(s.share * (c.error_hi - c.error_lo)) / nullif(sum(s.share), 0) as mean_interval_width
    from cells as c
    join changed using (router_id, model)
    join cluster_shares as s on s.router_id = c.router_id and s.cluster = c.cluster
    group by c.router_id, c.created_at, c.model
)
select b.router_id, b.created_at as onboarded_at, b.model, b.answers_used, b.clusters_answered, b.clusters,
       b.mean_interval_width,
       (select sum(r.cost)
        from results as r join prompt_splits as sp on sp.prompt_id = r.prompt_id and sp.split = 'val'
        where r.model = b.model and r.ingested_at <= b.created_at) as answers_cost
from bought as b;
