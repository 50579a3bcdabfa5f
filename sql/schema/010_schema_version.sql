-- What shape the store is in: the schema version recorded by uniroute/store/schema.py, which creates a new store
-- at the newest version and brings an older one up with the files of sql/migrations/ (each applied once).

-- Grain: one row per schema version the store reached: a new store's first row says 'created'; an upgraded
-- store gets one row per migration file applied. The store's version is the largest. Append-only.
create table if not exists schema_version (
    version    integer primary key,
    applied_at timestamp not null,
    applied    varchar not null          -- 'created', or the migration file that brought the store there
);

-- Grain: one row per (schema files, catalog) pair a read-write connection left the store in: a hash of the names
-- and text of sql/schema/ and of DuckDB's version, and a hash of the tables and views those files left. A connection
-- whose files and catalog hash to a recorded pair does not run the files again: being idempotent, they would change
-- nothing (uniroute/store/schema.py). New files, another DuckDB, or a view another uniroute replaced: no such row.
create table if not exists schema_applied (
    files_hash   varchar not null,
    catalog_hash varchar not null,
    applied_at   timestamp not null,
    primary key (files_hash, catalog_hash)
);
