-- Whether a clustering's prompt assignments are already stored (an identical rebuild reuses them).
select count(*) > 0 from cluster_assignments where clustering_id = $clustering_id
