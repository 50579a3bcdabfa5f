-- How many prompts a clustering's stored assignments hold (a build checks it wrote one per build prompt).
select count(*) from cluster_assignments where clustering_id = $clustering_id
