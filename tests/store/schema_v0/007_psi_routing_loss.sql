-- The Psi cell a router routes by, beside the one validation measured: they differ for a router with
-- count-aware Psi (kind kmeans_shrunk), which shrinks each cell toward the model's overall loss by its evidence.
-- Grain of psi unchanged: one row per (router_id, model, cluster). Null in rows written before this column.
alter table psi add column if not exists routing_loss double;
