-- Record that the store reached schema version $version ('created' at it, or the migration file applied).
insert into schema_version (version, applied_at, applied) values ($version, $at, $applied)
