-- Set one model's default cost (used where its results carry no cost).
update models set default_cost = $cost where model = $model
