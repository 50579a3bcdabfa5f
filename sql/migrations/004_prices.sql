-- Schema version -> 4. Prices with dates (sql/schema/014_prices.sql) replace models.default_cost as the one
-- source of model-level costs: each default cost a store holds becomes an undated per-call price (valid from
-- 1970-01-01, as `uniroute models set-cost` now writes them), and the column is no longer read or written. Router
-- versions and publications say which prices their costs came from (price_snapshot; null for older rows, whose
-- costs came from the logs and default costs of their day).

create table if not exists prices (
    model           varchar not null,
    valid_from      date not null,
    input_per_mtok  double check (input_per_mtok >= 0),
    output_per_mtok double check (output_per_mtok >= 0),
    per_call        double check (per_call >= 0),
    source          varchar not null,
    set_at          timestamp not null,
    check ((per_call is not null) <> (input_per_mtok is not null and output_per_mtok is not null)),
    check ((input_per_mtok is null) = (output_per_mtok is null))
);
insert into prices (model, valid_from, per_call, source, set_at)
select model, date '1970-01-01', default_cost, 'models.default_cost', now()::timestamp
from models
where default_cost is not null;

alter table routers add column if not exists price_snapshot varchar;
alter table publications add column if not exists price_snapshot varchar;
