-- build_prompt_digest's digest over the registered wanted_hashes (a build's prompts' text hashes, one per prompt).
select count(*) as n, coalesce(bit_xor(hash(text_hash)), 0) as hash_xor,
       coalesce(sum(hash(text_hash)::hugeint), 0) as hash_sum
from wanted_hashes
