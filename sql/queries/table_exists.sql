-- Whether the store has a table by this name (a store opened read-only is not upgraded to newer tables).
select count(*) > 0 as present from information_schema.tables
where table_catalog = current_database() and table_schema = 'main' and table_name = $table_name
