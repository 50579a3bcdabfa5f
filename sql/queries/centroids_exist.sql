-- Whether a clustering's centroids are already stored (builds and onboarding share them).
select count(*) > 0 from centroids where clustering_id = $clustering_id
