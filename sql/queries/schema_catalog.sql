-- The store's own tables and views as DuckDB states them (no temporary ones: each connection makes those), in a
-- fixed order: which tables the store has, and, hashed, whether running the schema files again could change it.
select 'table' as kind, table_name as name, sql from duckdb_tables()
where database_name = current_database() and schema_name = 'main' and not temporary
union all
select 'view', view_name, sql from duckdb_views()
where database_name = current_database() and schema_name = 'main' and not temporary and not internal
order by kind, name
