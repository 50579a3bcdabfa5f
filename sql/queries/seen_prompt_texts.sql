-- Every prompt text the store has seen, each once, in text order: the ingested prompts (every split, in a build or
-- not) and the routed prompts whose text was recorded (decisions.prompt, UNIROUTE_RECORD_PROMPTS). What an embedder
-- fitted to a teacher's vectors (static-tuned) is fitted on: the fit reads no label, so the prompts a build will
-- route, and the traffic it routed, can be in it (docs/decisions/0009-static-tuned-fits-every-seen-prompt.md).
select text
from (
    select text from prompts
    union
    select prompt as text from decisions where prompt is not null
)
order by text
