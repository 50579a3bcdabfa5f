-- The newest price of each (model, valid_from): a price set again unchanged is not recorded twice.
select model, valid_from, input_per_mtok, output_per_mtok, per_call
from prices
qualify row_number() over (partition by model, valid_from order by set_at desc) = 1
