-- The candidate kinds one build compared (router_selection's rows of that build), best validation Area first.
select kind, candidate_router_id, value, shrinkage, val_area, val_area_se, diff_to_default, diff_se, p_best,
       chosen, default_kind
from router_candidates
where build_router_id = $router_id
order by val_area desc nulls last, kind
