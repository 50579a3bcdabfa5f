-- A stored fitted embedder by id (0 or 1 rows).
select embedder_id, state from fitted_embedders where embedder_id = $embedder_id
