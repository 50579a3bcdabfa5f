-- Cached annotator answers for the wanted texts. Needs a relation `wanted_attribute_hashes(text_hash)`
-- registered on the connection. Grain: one row per wanted text the annotator has answered about.
select a.text_hash, a.attributes
from prompt_attributes as a
semi join wanted_attribute_hashes as w on w.text_hash = a.text_hash
where a.annotator_id = $annotator_id
