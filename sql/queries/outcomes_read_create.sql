-- The checked rows of an outcomes file, appended batch by batch (uniroute/ingest/outcomes.py) so that the file is
-- never held whole in Python; DuckDB spills a large one.
-- Grain: one row per row of the file.
create or replace temp table outcomes_read (
    row_number bigint,
    decision_id varchar,
    score double,
    cost double,
    input_tokens bigint,
    output_tokens bigint
)
