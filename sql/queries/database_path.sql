-- The file of the connection's current database (a process-level cache of its rows is keyed by it).
select path from duckdb_databases() where database_name = current_database()
