-- Schema version 4 -> 5. The embedding cache leaves the store file for a partitioned Parquet dataset that Dask
-- workers write (uniroute/store/embeddings.py); the store shows it as a temporary `embeddings` view per connection.
-- The table cannot be copied to files here (the dataset's location is a setting, and COPY takes no bound path), so
-- it is renamed, and the first read-write connection after this moves its rows into the dataset and drops it
-- (store.embeddings.export_legacy): one copy of every vector at all times, the table until the files are written.
alter table embeddings rename to embeddings_unexported;
