-- The router kinds a build compared before choosing the one it serves (uniroute.evaluation.selection).

-- Grain: one row per (build_router_id, kind): one candidate router kind of one build, with the hyper-parameters
-- it was tuned to and its validation Area measured by simulated onboarding (training LLMs only, no test prompt).
-- build_router_id is the router the build wrote as its own (served, or a challenger when not promoted);
-- candidate_router_id the stored version of this candidate (the same id for the chosen kind).
create table if not exists router_candidates (
    build_router_id     varchar not null,
    kind                varchar not null,   -- kmeans, kmeans_shrunk, learnedmap, knn
    candidate_router_id varchar not null,
    value               integer not null,   -- K (clusters) or k (neighbours)
    shrinkage           double not null,    -- kmeans_shrunk: pseudo-prompts of the overall loss per Psi cell
    val_area            double,             -- null when the build had too few training LLMs to measure it
    val_area_se         double,             -- bootstrap over the measured prompts and the training LLMs
    diff_to_default     double,             -- val_area minus the default kind's
    diff_se             double,             -- standard error of that paired difference
    p_best              double,             -- share of bootstrap resamples in which this kind has the best Area
    chosen              boolean not null,   -- the kind the build serves
    default_kind        varchar not null,   -- the kind served unless another beats it clearly
    created_at          timestamp not null,
    primary key (build_router_id, kind)
);

-- Grain: one row per (build, candidate kind), newest build first: what each nightly build weighed, which kind
-- it chose and whether the build became the champion (promoted) or stayed a challenger.
create or replace view router_selection as
select c.build_router_id, r.created_at as built_at, r.promoted as build_promoted, c.kind, c.candidate_router_id,
       c.value, c.shrinkage, c.val_area, c.val_area_se, c.diff_to_default, c.diff_se, c.p_best, c.chosen,
       c.default_kind
from router_candidates as c
join routers as r on r.router_id = c.build_router_id
order by r.created_at desc, c.build_router_id desc, c.val_area desc nulls last, c.kind;
