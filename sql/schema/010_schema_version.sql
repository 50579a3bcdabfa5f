-- What shape the store is in: the schema version recorded by uniroute/store/schema.py, which creates a new store
-- at the newest version and brings an older one up with the files of sql/migrations/ (each applied once).

-- Grain: one row per schema version the store reached: a new store's first row says 'created'; an upgraded
-- store gets one row per migration file applied. The store's version is the largest. Append-only.
create table if not exists schema_version (
    version    integer primary key,
    applied_at timestamp not null,
    applied    varchar not null          -- 'created', or the migration file that brought the store there
);
