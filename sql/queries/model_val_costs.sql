-- c(m): each active model's routing cost. A per-call price in force today (prices_in_force, set by `uniroute
-- models set-price --per-call` or `set-cost`) is the cost: a price says what a call costs now, the logs what it
-- cost then. Otherwise the mean per-query cost of its validation results as logged (a token price cannot price
-- them: results carry no token counts). Models with no known cost come back with a null cost. A model with
-- battles on validation prompts but no results there (pairwise evidence only) takes its per-call price: battles
-- carry no cost.
with logged as (
    select r.model, avg(r.cost) as cost, count(*) as n
    from results as r
    join prompt_splits as s on s.prompt_id = r.prompt_id and s.split = 'val'
    join priced_models as m on m.model = r.model and m.status = 'active'
    group by r.model
    union all
    select m.model, null as cost, 0 as n
    from priced_models as m
    where m.status = 'active'
      and exists (select 1 from battles as b join prompt_splits as s on s.prompt_id = b.prompt_id and s.split = 'val'
                  where m.model = b.model_a or m.model = b.model_b)
      and not exists (select 1 from results as r join prompt_splits as s on s.prompt_id = r.prompt_id
                      and s.split = 'val' where r.model = m.model)
)
select l.model, coalesce(p.per_call, l.cost) as cost, l.n
from logged as l
left join prices_in_force as p on p.model = l.model
order by l.model
