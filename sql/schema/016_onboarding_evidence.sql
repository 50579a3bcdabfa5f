-- The evidence gate of onboarding (uniroute/pipeline/pool/evidence_gate.py): where a newcomer would win traffic on too
-- little evidence it is provisional, routed there by the upper end of its error's interval.

-- Grain: one row per (onboarding router version, model it added or refreshed, cluster): the model's answers in
-- the cluster, its measured error and 95% Wilson interval, the model the cluster goes to at the default budget
-- without it and with it (ungated), whether it wins, whether its evidence is thin there (fewer answers than
-- min_cluster_answers or an interval wider than max_interval_width), provisional (wins and thin), the error it
-- routes by (the bound where provisional), whether it still wins on it, and the prompts to answer next there.
create table if not exists onboarding_gate (
    router_id          varchar not null,
    model              varchar not null,
    cluster            integer not null,
    answers            bigint not null,
    error              double not null,
    error_lo           double not null,
    error_hi           double not null,
    interval_width     double not null,
    winner_without     varchar not null,  -- '' when it is alone in the pool
    winner_with        varchar not null,
    wins               boolean not null,
    thin               boolean not null,
    provisional        boolean not null,
    routing_error      double not null,
    wins_on_bound      boolean not null,
    answers_needed     bigint not null,   -- more answers before the gate calls the cell full (0: not provisional)
    next_prompts       varchar[] not null,  -- the onboarding set's continuation in this cluster, best first
    budget             double not null,   -- the default budget the decisions were taken at
    min_cluster_answers bigint not null,  -- the thresholds in force (UNIROUTE_GATE_*)
    max_interval_width double not null,
    primary key (router_id, model, cluster)
);

-- Grain: one row per (model, cluster) of the newest gate verdict on each model (its latest onboarding that
-- measured it anew): status 'provisional' or 'full' in the cluster and model_status over all its clusters. Children
-- written later (other models onboarded, a model retired) keep its gated cells until it is onboarded again.
create or replace view onboarding_evidence as
with latest as (
    select g.*, r.created_at as onboarded_at,
           dense_rank() over (partition by g.model order by r.created_at desc, g.router_id desc) as recency
    from onboarding_gate as g join routers as r using (router_id)
)
select router_id, onboarded_at, model, cluster, answers, error, error_lo, error_hi, interval_width, budget,
       winner_without, winner_with, wins, thin, provisional,
       case when provisional then 'provisional' else 'full' end as status,
       case when bool_or(provisional) over (partition by router_id, model) then 'provisional' else 'full' end
           as model_status,
       routing_error, wins_on_bound, answers_needed, next_prompts, min_cluster_answers, max_interval_width
from latest
where recency = 1;
