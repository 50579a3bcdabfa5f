-- Cap what DuckDB holds in memory on this connection (buffered blocks, query state); beyond it, it evicts and spills.
set memory_limit = $limit
