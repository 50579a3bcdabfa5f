-- Record one price of a model from a date (append-only: prices_in_force takes the newest).
insert into prices (model, valid_from, input_per_mtok, output_per_mtok, per_call, source, set_at)
values ($model, $valid_from, $input_per_mtok, $output_per_mtok, $per_call, $source, $set_at)
