-- Everything ingested so far, as the ordered list of file content hashes (hashed again in Python).
select coalesce(string_agg(file_hash, ',' order by file_hash), '') as files from ingested_files
