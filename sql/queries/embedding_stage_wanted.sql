-- Hash the texts asked for, keeping their input positions, for the lookup and missing queries below.
-- Needs a registered relation `wanted_texts(pos bigint, text varchar)`. sha256() is the hex digest of the
-- UTF-8 bytes, the same as uniroute.embed.text_hash() and prompts.text_hash.
create or replace temp table embedding_wanted as
select pos, sha256(text) as text_hash
from wanted_texts
