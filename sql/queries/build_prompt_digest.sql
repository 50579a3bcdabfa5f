-- How many prompts a build reads (build_prompt_ids) and a digest of their text hashes: the xor and the sum of
-- DuckDB's 64-bit hash of each. An embedding fill records it (embed/fill.py), and a build that finds the same
-- digest over its own prompts' hashes (hashes_digest.sql) knows the fill covered exactly its prompts.
select count(*) as n, coalesce(bit_xor(hash(p.text_hash)), 0) as hash_xor,
       coalesce(sum(hash(p.text_hash)::hugeint), 0) as hash_sum
from prompts as p
where p.prompt_id in (select prompt_id from build_prompt_ids)
