-- The recent traffic's prompt mix for calibrating budgets and cost caps: the newest decisions' stored embeddings
-- (float16 blobs) of one embedder since a time, at most $limit of them, and how many the window holds in all.
select embedding, embedding_dim, count(*) over () as in_window, min(decided_at) over () as since
from decisions
where embedder_id = $embedder_id and embedding is not null and decided_at >= $since
  and octet_length(embedding) = 2 * embedding_dim  -- a torn embedding stored before records were checked
order by decided_at desc
limit $limit
