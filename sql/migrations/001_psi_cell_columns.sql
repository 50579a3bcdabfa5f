-- Schema version 0 -> 1. Version 0 is every store written before versions were recorded: those releases applied
-- all of sql/schema/ on each read-write connection, later columns of psi arriving as `alter table` patches.
-- sql/schema/ now declares psi in its current shape, so such a store gets here what the patches gave it (a store
-- from before the patches too, in the order sql/schema/003_routers.sql declares the columns), and its old rows
-- get the values that the views used to compute from a copy of a Python constant. The views then read stored
-- values only. Applied once, in the transaction that records version 1 (uniroute/store/schema.py); a migration
-- file is history: it is never edited once released, and the next change to a relation's shape is 002.

alter table psi add column if not exists routing_loss double;
alter table psi add column if not exists error_lo double;
alter table psi add column if not exists error_hi double;
alter table psi add column if not exists sparse boolean;

-- Rows written before routing_loss existed: the views showed the measured cell as the one routing uses.
update psi set routing_loss = loss where routing_loss is null;
-- Rows written before the build stored the flag: flagged as the views flagged them, by the threshold of that
-- release (routers/cluster/psi.py SPARSE_CELL was 10). The 95% interval stays null: it was never computed for them.
update psi set sparse = n < 10 where sparse is null;
