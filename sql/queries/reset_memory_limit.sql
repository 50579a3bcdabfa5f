-- DuckDB's default memory limit (80% of RAM) back on this connection.
reset memory_limit
