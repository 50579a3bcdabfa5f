-- Prices with dates: what a model costs from a date on. The one source of truth for model-level costs:
-- `uniroute models set-price` writes dated prices, `uniroute models set-cost` an undated per-call price (valid
-- from 1970-01-01), and the old models.default_cost values were moved here by sql/migrations/004_prices.sql.

-- Grain: one row per price set (append-only: a correction is a newer row, the old one stays as history). A price
-- is per million input and output tokens, or per call, never both.
create table if not exists prices (
    model           varchar not null,
    valid_from      date not null,
    input_per_mtok  double check (input_per_mtok >= 0),
    output_per_mtok double check (output_per_mtok >= 0),
    per_call        double check (per_call >= 0),
    source          varchar not null,   -- `set-price`, `set-cost`, a file's path, or models.default_cost (migrated)
    set_at          timestamp not null,
    check ((per_call is not null) <> (input_per_mtok is not null and output_per_mtok is not null)),
    check ((input_per_mtok is null) = (output_per_mtok is null))
);

-- Grain: one row per model with a price in force today: the latest valid_from on or before today (the newest set
-- among prices of the same date).
create or replace view prices_in_force as
select model, valid_from, input_per_mtok, output_per_mtok, per_call, source, set_at
from prices
where valid_from <= current_date
qualify row_number() over (partition by model order by valid_from desc, set_at desc) = 1;

-- Grain: one row per model: its status and the per-call price in force (`default_cost`: what a result logged
-- without a cost is charged, the name the queries that fill costs always used).
create or replace view priced_models as
select m.model, m.status, m.first_seen, p.per_call as default_cost, p.input_per_mtok, p.output_per_mtok,
       p.valid_from as price_from
from models as m
left join prices_in_force as p on p.model = m.model;

-- The cost of one call of a model on a day, from the price in force that day: its per-call price, or its token
-- prices times the call's tokens (null when the call's tokens or the model's price are unknown). What views over
-- routed traffic charge a decision or an outcome that carries tokens. (The linter reads the macro's parameters as
-- unqualified columns.)
-- noqa: disable=RF03
create or replace macro priced_call_cost(call_model, call_day, input_tokens, output_tokens) as (
    select coalesce(p.per_call, (input_tokens * p.input_per_mtok + output_tokens * p.output_per_mtok) / 1e6)
    from prices as p
    where p.model = call_model and p.valid_from <= call_day
    order by p.valid_from desc, p.set_at desc
    limit 1
);
-- noqa: enable=RF03
