-- Each model's median latency of its successful calls in the request path since a time, in seconds, and how many
-- calls that is: what a latency cap (`--max-latency`, `uniroute/max-latency-S`) compares against. A model with no
-- successful call in the window has no row (its latency is unknown, never zero).
select
    struct_extract(a.call, 'model') as model,
    quantile_cont(a.call.latency_ms, 0.5) / 1000 as latency_s,
    count(*) as calls
from decisions as d, unnest(d.attempts) as a (call)
where d.decided_at >= $since and a.call.error is null and a.call.latency_ms is not null
group by 1
order by 1
