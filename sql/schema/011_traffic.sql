-- Traffic: what the serving paths decided (decision records from the spool, uniroute/pipeline/serving/records.py) and
-- what happened after (outcomes files). Append-only; loaded by the inbox and `uniroute ingest`, idempotently by
-- decision_id, one file per transaction.

-- Grain: one row per routed prompt (decision_id is a random UUID written by the serving process).
create table if not exists decisions (
    decision_id         varchar primary key,
    schema_version      integer not null,   -- of the record (ingest/decisions.py RECORD_VERSION)
    decided_at          timestamp not null, -- UTC
    source              varchar not null check (source in ('cli', 'file', 'pyfunc', 'api')),
    router_id           varchar not null,
    publication_version varchar,            -- null: no publication of this router answered
    embedder_id         varchar,
    text_hash           varchar not null,   -- sha256 hex of the prompt text (prompts.text_hash)
    cluster             integer,            -- null for a kind without clusters (K-NN)
    neighbours          varchar,            -- K-NN: the nearest reference prompt ids, comma-separated
    centroid_distance   double,             -- Euclidean distance to the nearest centroid (drift)
    model               varchar not null,
    fallbacks           varchar[],          -- ranked models after the chosen one, when the router gave them
    lam                 double not null,
    budget              double,
    setting             varchar,            -- lambda, budget or default budget
    expected_score      double,
    expected_cost       double,
    propensity          double not null check (propensity > 0 and propensity <= 1),
    explored            boolean not null,
    embedding           blob,               -- float16 little-endian, embedding_dim values
    embedding_dim       integer,
    prompt              varchar,            -- the text only when the user opted in (UNIROUTE_RECORD_PROMPTS)
    -- What happened in the request path (the gateway; null for the other serving paths):
    answered_by         varchar,            -- the model that answered (null: none did, see failure)
    attempts            struct(model varchar, error varchar, latency_ms double)[], -- each call, in order
    ttft_ms             double,             -- time to the first token (the whole answer when not streamed)
    latency_ms          double,             -- the request's total latency
    input_tokens        bigint,             -- the backend's usage
    output_tokens       bigint,
    cost                double,             -- real cost: the tokens at the answering model's price in force
    failure             varchar,            -- why no model answered (every candidate failed, or the cap left none)
    conversation        varchar,            -- sha256 of the conversation's key (header or `user` field)
    source_file         varchar not null,
    file_hash           varchar not null,
    ingested_at         timestamp not null
);

-- Grain: one row per decision with an observed outcome (the first outcome given for a decision_id stands; a
-- later file giving another score for it is quarantined).
create table if not exists outcomes (
    decision_id   varchar primary key,
    score         double not null check (score >= 0 and score <= 1),
    cost          double check (cost >= 0),
    input_tokens  bigint check (input_tokens >= 0),
    output_tokens bigint check (output_tokens >= 0),
    source_file   varchar not null,
    file_hash     varchar not null,
    ingested_at   timestamp not null
);

-- Grain: one row per decision: the decision records as users query them. The embedding and the prompt's unkeyed
-- sha256 are left out (`uniroute sql` reads this view, never the table): either would let a guessed prompt be
-- confirmed.
create or replace view routing_decisions as
select decision_id, decided_at, cast(decided_at as date) as day, source, router_id, publication_version,
       embedder_id, cluster, neighbours, centroid_distance, model, fallbacks,
       lam, budget, setting, expected_score, expected_cost, propensity, explored, embedding_dim, prompt,
       answered_by, attempts, ttft_ms, latency_ms, input_tokens, output_tokens, cost, failure, conversation,
       schema_version, source_file, ingested_at
from decisions;

-- Grain: one row per outcome, beside the decision it is the outcome of.
create or replace view routing_outcomes as
select o.decision_id, d.decided_at, cast(d.decided_at as date) as day, d.source, d.router_id, d.cluster, d.model,
       o.score, o.cost, o.input_tokens, o.output_tokens, d.expected_score, d.expected_cost, d.propensity,
       o.source_file, o.ingested_at
from outcomes as o join decisions as d on d.decision_id = o.decision_id;
