-- The champion before the current one (0 or 1 rows): the newest row of champion_history naming another version
-- than the newest row does. What `uniroute rollback` goes back to when no version is named.
with history as (
    select router_id, became_at, row_number() over (order by became_at desc, router_id desc) as rank
    from champion_history
)
select router_id from history
where rank > 1 and router_id <> (select router_id from history where rank = 1)
order by rank limit 1
