-- Whether the schema files hashing to $files are known to leave the catalog hashing to $catalog as it is.
select count(*) > 0 as known from schema_applied where files_hash = $files and catalog_hash = $catalog
