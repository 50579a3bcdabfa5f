-- DuckDB's memory limit of this connection (a size such as '18.7 GiB').
select current_setting('memory_limit')
