-- Cache one annotator answer, unless this text already has one from this annotator.
insert into prompt_attributes (text_hash, annotator_id, attributes, answer, answered_at)
select $text_hash, $annotator_id, $attributes, $answer, $now
where not exists (
    select 1 from prompt_attributes where text_hash = $text_hash and annotator_id = $annotator_id
)
