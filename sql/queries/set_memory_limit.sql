-- Cap what DuckDB holds in memory on this connection (buffered blocks, query state); beyond it, it evicts and spills.
SET memory_limit = $limit
