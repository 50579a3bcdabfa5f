-- A decisions file's new records. Needs decisions_staged (uniroute/ingest/decisions.py STAGED_SCHEMA) registered,
-- every record checked (decision_checks.py), its time in UTC and its embedding decoded.
-- Idempotent by decision_id: a stored id is skipped, and a record repeated within the file lands once.
insert into decisions (decision_id, schema_version, decided_at, source, router_id, publication_version, embedder_id,
                       text_hash, cluster, neighbours, centroid_distance, model, fallbacks, lam, budget, setting,
                       expected_score, expected_cost, propensity, explored, embedding, embedding_dim, prompt,
                       answered_by, attempts, ttft_ms, latency_ms, input_tokens, output_tokens, cost, failure,
                       conversation, source_file, file_hash, ingested_at)
select decision_id, schema_version, decided_at, source, router_id, publication_version,
       embedder_id, text_hash, cluster, neighbours, centroid_distance, model, fallbacks, lam, budget, setting,
       expected_score, expected_cost, propensity, coalesce(explored, false), embedding,
       embedding_dim, prompt, answered_by, attempts, ttft_ms, latency_ms, input_tokens, output_tokens, cost, failure,
       conversation, $source_file, $file_hash, $now
from (
    select *, row_number() over (partition by decision_id order by line_number) as copy
    from decisions_staged
) as staged
where copy = 1 and decision_id not in (select decision_id from decisions)
