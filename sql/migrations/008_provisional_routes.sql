-- Schema version 7 -> 8. The evidence gate (uniroute/pipeline/pool/evidence_gate.py) publishes, per routing-table row,
-- the pool models that are provisional in the cluster (routed there by the upper end of their error's interval).
-- Rows published before the gate existed keep null: nothing was gated then. The gate's own rows are a new table
-- (sql/schema/016_onboarding_evidence.sql), which the schema files create on every store.
alter table published_routes add column if not exists provisional varchar[];
