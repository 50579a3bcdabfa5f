-- Schema version -> 7. Published budgets say which prompt mix their lambdas were calibrated on: the recent
-- traffic's (decision records' embeddings in the window) or the validation prompts
-- (uniroute/pipeline/serving/calibration.py).
-- Rows published before: the validation prompts, the only mix there was.
alter table published_budgets add column if not exists calibration varchar;
update published_budgets set calibration = 'validation prompts' where calibration is null;
