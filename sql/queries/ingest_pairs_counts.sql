-- What ingesting a pairwise file adds. Needs the ingest_* tables of the pairwise check. One row.
select
    (select count(*) from ingest_pairs_accepted) as rows_accepted,
    (select count(*) from ingest_pair_exceptions where status = 'stored') as rows_stored,
    (select count(*) from ingest_quarantined) as rows_quarantined,
    (select count(*) from ingest_accepted_prompts as a join ingest_prompt_state as s on s.pid = a.pid
     where not s.prompt_stored) as new_prompts,
    (select count(*) from ingest_accepted_models as a join ingest_model_state as s on s.mid = a.mid
     where not s.model_stored) as new_models
