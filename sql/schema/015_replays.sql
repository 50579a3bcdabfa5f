-- Replays of logged traffic (uniroute/pipeline/traffic/replay.py): each `uniroute replay` run's inputs and results,
-- and the nightly build's shadow gate (uniroute/pipeline/traffic/shadow_gate.py), which replays the recent traffic
-- with the challenger and the champion at the same expected spend before a challenger is promoted. Append-only.

-- Grain: one row per replay run: what was replayed (window, router, pool edits, prices, setting) and what came
-- out (the result as JSON, the same document `uniroute replay --json` prints).
create table if not exists replays (
    replay_id      varchar primary key,
    created_at     timestamp not null,
    router_id      varchar not null,    -- the router version the traffic was re-routed with
    window_from    timestamp,           -- the first and last decision replayed (null: none)
    window_to      timestamp,
    n_decisions    bigint not null,
    inputs         varchar not null,    -- JSON: last, since, router, without, with, prices, lambda, budget
    expected_score double,              -- the replayed policy's mean expected score
    expected_cost  double,              -- its mean expected cost per prompt (the router's cost unit)
    results        varchar not null     -- JSON: the whole result (per model, differences, outcome estimates)
);

-- Grain: one row per build whose challenger went through the shadow gate (or whose gate was skipped, and why).
create table if not exists shadow_gates (
    build_router_id   varchar primary key, -- the build's router (the challenger)
    champion_id       varchar,             -- the champion it was compared with
    n_decisions       bigint not null,     -- recent decisions replayed (0 when skipped)
    window_days       double not null,
    spend             double,              -- the common expected mean cost per prompt both were held to
    champion_score    double,              -- mean expected score on the traffic, each by its own Psi
    challenger_score  double,
    difference        double,              -- challenger minus champion, paired over the prompts
    difference_se     double,
    p_worse           double,              -- one-sided p-value of "the challenger is worse" (paired z-test)
    test              varchar not null,    -- which test, at which alpha
    verdict           varchar not null check (verdict in ('pass', 'refuse', 'skipped')),
    line              varchar not null,    -- the one line the build reports
    created_at        timestamp not null
);

-- Grain: one row per build with a shadow gate, newest first: beside router_selection, what the traffic said about
-- the build's router against the champion of the day, and whether the build was promoted.
create or replace view router_shadow_gate as
select g.build_router_id, r.created_at as built_at, r.promoted as build_promoted, g.champion_id, g.verdict,
       g.n_decisions, g.window_days, g.spend, g.champion_score, g.challenger_score, g.difference, g.difference_se,
       g.p_worse, g.test, g.line
from shadow_gates as g
join routers as r on r.router_id = g.build_router_id
order by r.created_at desc, g.build_router_id desc;
