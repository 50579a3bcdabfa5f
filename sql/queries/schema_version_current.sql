-- The store's schema version: the largest recorded (0 when none is, which the store never commits).
select coalesce(max(version), 0) as version from schema_version
