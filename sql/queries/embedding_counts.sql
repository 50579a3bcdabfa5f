-- How many vectors the cache holds per embedder.
select embedder_id, any_value(dim) as dim, count(*) as n_vectors, max(created_at) as last_added
from embeddings
group by embedder_id
order by embedder_id
