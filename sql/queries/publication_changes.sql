-- What changed on the budget grid from the publication before $version to $version.
-- Grain: one row per (budget, model) whose traffic changed.
select from_version, budget, model, pool_change, share_before, share_after, share_change,
       clusters_gained, clusters_lost
from publication_diff
where to_version = $version and consecutive and grid = 'budget'
order by budget, model
