-- A day's drift per router that served it (UTC day $day): the share of decisions far from every centroid.
select router_id, decisions, far_share, far_threshold from traffic_drift where day = $day order by router_id
