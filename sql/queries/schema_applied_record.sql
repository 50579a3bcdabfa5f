-- Record that the schema files hashing to $files left the store's catalog hashing to $catalog (kept once per pair).
insert or ignore into schema_applied (files_hash, catalog_hash, applied_at) values ($files, $catalog, $at)
