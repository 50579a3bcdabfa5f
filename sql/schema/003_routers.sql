-- Derived state of the pipeline. Keyed by clustering_id / router_id / version; never updated in place.

-- Grain: one row per prompt. A prompt's split is fixed once assigned (from the logs, or deterministically
-- from its id), so validation sets stay stable across nightly builds and onboarding.
create table if not exists prompt_splits (
    prompt_id   varchar primary key,
    split       varchar not null check (split in ('train', 'val', 'test')),
    source      varchar not null check (source in ('logs', 'hash')),
    assigned_at timestamp not null
);

-- Grain: one row per (clustering_id, cluster): the K-means centroids of one build.
create table if not exists centroids (
    clustering_id varchar not null,
    cluster       integer not null,
    center        float[] not null,
    primary key (clustering_id, cluster)
);

-- Grain: one row per router version. Onboarding and retiring write a child version (parent_id) on the same
-- clusters; a build writes its served router and, beside it, the candidates it compared (candidate_of).
-- The champion is the newest row of champion_history (below): the newest promoted version unless a rollback
-- chose an earlier one since.
create table if not exists routers (
    router_id     varchar primary key,
    parent_id     varchar,
    origin        varchar not null check (origin in ('build', 'onboard', 'retire')),
    candidate_of  varchar,              -- the build's served router this one was compared with (not registered)
    clustering_id varchar not null,
    kind          varchar not null,     -- kmeans, learnedmap, ...: the router's cluster map
    embedder_id   varchar not null,
    k             integer not null,
    models        varchar[] not null,
    val_area      double,               -- training LLMs' Area on validation prompts (champion criterion)
    promoted      boolean not null,     -- became champion when written
    reason        varchar not null,
    data_fingerprint varchar not null,
    router        blob not null,        -- the fitted router as npz arrays (uniroute.routers.serialize), no pickle
    created_at    timestamp not null,
    price_snapshot varchar              -- which prices its costs came from (pipeline.prices); null: before prices
);

-- Grain: one row per rollback (`uniroute rollback`): the champion moved back to an earlier version. The routers
-- table is never edited: a rollback is a fact of its own, recorded in the operation that made it.
create table if not exists champion_moves (
    router_id      varchar not null,    -- the version that became the champion again
    from_router_id varchar not null,    -- the champion it replaced
    forced         boolean not null,    -- rolled back although the version lacks models added since
    missing        varchar[] not null,  -- the active models it does not route (empty unless forced)
    moved_at       timestamp not null
);

-- Grain: one row per time a router version became the champion: when written promoted (a build that won, an
-- onboarding or retirement child) or when a rollback chose it again. The champion is the newest row.
create or replace view champion_history as
select router_id, created_at as became_at, origin as how from routers where promoted
union all
select router_id, moved_at as became_at, 'rollback' as how from champion_moves;

-- Grain: one row per fitted embedder (TF-IDF) that cannot be rebuilt by name: every router, parent or child,
-- built on that embedder id finds it here.
create table if not exists fitted_embedders (
    embedder_id varchar primary key,
    state       blob not null,          -- npz arrays (uniroute.embed.tfidf_to_bytes), no pickle
    created_at  timestamp not null
);

-- Grain: one row per router version registered in MLflow: derived from the store by reconciliation.
create table if not exists router_mlflow (
    router_id     varchar primary key,
    run_id        varchar not null,
    model_version varchar not null,
    logged_at     timestamp not null
);

-- Grain: one row per (router_id, model, cluster): a model's mean loss on one cluster, with its evidence, the
-- cell routing uses and what users read about it (routers/psi.cell_frame; pipeline/registry.psi_table writes them).
create table if not exists psi (
    router_id    varchar not null,
    model        varchar not null,
    cluster      integer not null,
    loss         double not null,       -- the measured mean loss on the cluster's validation prompts
    n            bigint not null,       -- validation prompts behind the cell; 0 = fallback to the pool prior
    routing_loss double,                -- the cell the router routes by: loss, empty cells at the pool prior,
                                        -- shrunk toward it by evidence for count-aware Psi (kmeans_shrunk)
    error_lo     double,                -- 95% Wilson interval of loss; null in rows written before it was stored
    error_hi     double,
    sparse       boolean,               -- fewer labelled prompts behind the cell than routers/cluster/psi.py's
                                        -- SPARSE_CELL
    primary key (router_id, model, cluster)
);

-- Grain: one row per (router_id, model): the cost the router uses for a model.
create table if not exists router_costs (
    router_id varchar not null,
    model     varchar not null,
    cost      double not null,
    primary key (router_id, model)
);

-- Grain: one row per (router_id, method, metric): held-out evaluation of a build.
create table if not exists router_metrics (
    router_id varchar not null,
    method    varchar not null,
    metric    varchar not null,
    value     double,
    primary key (router_id, method, metric)
);

-- Grain: one row per (router_id, method, point): the deferral curve on held-out prompts.
create table if not exists router_curves (
    router_id varchar not null,
    method    varchar not null,
    point     integer not null,
    cost      double not null,          -- normalised by the most expensive pool model
    score     double not null,
    primary key (router_id, method, point)
);

-- Grain: one row per published version (a snapshot of routing tables for the champion and active pool).
-- Written in the same transaction as its tables, after its folder is complete; `published/current` is then
-- pointed at the newest row (and re-pointed by reconciliation after a crash).
create table if not exists publications (
    version       varchar primary key,
    router_id     varchar not null,
    embedder_id   varchar not null,
    pool          varchar[] not null,
    fingerprint   varchar not null,     -- router + pool + grid: an unchanged fingerprint publishes nothing
    checksum      varchar not null,     -- sha256 over the published files
    path          varchar not null,
    created_at    timestamp not null,
    price_snapshot varchar              -- the published router's (routers.price_snapshot)
);

-- Grain: one row per publication logged as an MLflow run: derived from the store by reconciliation.
create table if not exists publication_mlflow (
    version   varchar primary key,
    run_id    varchar not null,
    logged_at timestamp not null
);

-- Grain: one row per (version, cluster, budget) : the model a gateway sends that cluster's prompts to.
create table if not exists published_routes (
    version  varchar not null,
    cluster  integer not null,
    grid     varchar not null check (grid in ('budget', 'lambda')),
    budget   double,                    -- fraction of the most expensive pool model's cost (grid = budget)
    lam        double not null,     -- lambda (a DuckDB keyword, hence the short name)
    model    varchar not null,
    fallbacks varchar[],             -- the rest of the pool, best first (null: published before they were kept)
    provisional varchar[]            -- pool models provisional in the cluster: routed by their error's upper bound
                                     -- (pipeline/pool/evidence_gate.py); null: published before the gate
);

-- Grain: one row per (version, grid, budget/lambda): expected quality and cost of routing at that setting.
create table if not exists published_budgets (
    version        varchar not null,
    grid           varchar not null,
    budget         double,
    lam              double not null,
    expected_score double not null,
    expected_cost  double not null,     -- normalised by the most expensive pool model
    calibration    varchar              -- the prompt mix the lambdas were computed on: traffic window or validation
);

-- Grain: one row per routed prompt per `uniroute route --log` call.
create table if not exists routing_log (
    batch_id   varchar not null,
    router_id  varchar not null,
    prompt_index integer not null,
    text_hash  varchar not null,
    cluster    integer,
    model      varchar not null,
    lam          double not null,
    budget     double,
    routed_at  timestamp not null
);

-- Grain: one row per (clustering_id, prompt_id): the nearest centroid of a prompt. Written by builds for
-- every embedded prompt and by onboarding for new validation prompts, so Psi is a SQL group-by.
create table if not exists cluster_assignments (
    clustering_id varchar not null,
    prompt_id     varchar not null,
    cluster       integer not null,
    primary key (clustering_id, prompt_id)
);
