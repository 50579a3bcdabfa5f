-- What ingesting the file adds. Needs the ingest_* tables of the check. One row.
select
    (select coalesce(sum(results), 0) from ingest_accepted_prompts) as rows_accepted,
    (select count(*) from ingest_exceptions where status = 'stored') as rows_stored,
    (select count(*) from ingest_quarantined) as rows_quarantined,
    (select count(*) from ingest_accepted_prompts as a join ingest_prompt_state as s on s.pid = a.pid
     where not s.prompt_stored) as new_prompts,
    (select count(*) from ingest_accepted_models as a join ingest_model_state as s on s.mid = a.mid
     where not s.model_stored) as new_models,
    -- new prompts whose text is stored already under another prompt_id (reported: they may be one question)
    (select count(*) from ingest_accepted_prompts as a
     join ingest_prompt_state as s on s.pid = a.pid and not s.prompt_stored
     join ingest_prompts as p on p.pid = a.pid
     where exists (select 1 from prompts as q where q.text_hash = sha256(p.text) and q.prompt_id <> p.prompt_id))
     as shared_texts
