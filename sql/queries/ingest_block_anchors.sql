-- Rows of a later block of a large file (read in blocks, uniroute/ingest/blocks.py) whose prompt an earlier block
-- of the same file wrote with another text or split. Read whole, the prompt's first row in the file fixes its text
-- and split; read in blocks, that row's prompt is already stored (this file's source and timestamp), so the row in
-- this block that disagrees with it must not become the block's own first row. Needs the relation
-- ingest_block_rows(idx, prompt_id, prompt, split) of the block's rows without a problem yet.
-- Grain: one row per block row that disagrees.
select
    b.idx,
    (b.prompt is distinct from p.text) as other_text,
    p.split as stored_split
from ingest_block_rows as b
join prompts as p on p.prompt_id = b.prompt_id and p.source_file = $source_file and p.first_seen = $now
where b.prompt is distinct from p.text or b.split is distinct from p.split
order by b.idx
