-- Every published version the store records.
select version from publications order by version
