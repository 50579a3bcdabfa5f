-- Schema version 8 -> 9. Decision records written in the request path (the gateway, uniroute/gateway/) say what
-- happened to each request: the model that answered, each attempt, time to first token and total latency, the
-- backend's token counts, the real cost, a failure and the conversation. Decisions recorded before keep null: they
-- were routed beside the request path, where none of it was seen. A store from before the traffic tables has no
-- decisions table yet: the schema files create it in its current shape.
alter table if exists decisions add column if not exists answered_by varchar;
alter table if exists decisions add column if not exists attempts
    struct(model varchar, error varchar, latency_ms double)[];
alter table if exists decisions add column if not exists ttft_ms double;
alter table if exists decisions add column if not exists latency_ms double;
alter table if exists decisions add column if not exists input_tokens bigint;
alter table if exists decisions add column if not exists output_tokens bigint;
alter table if exists decisions add column if not exists cost double;
alter table if exists decisions add column if not exists failure varchar;
alter table if exists decisions add column if not exists conversation varchar;
