-- Psi cells as users read them: the measured error with its 95% Wilson interval and its evidence, the error
-- routing uses (shrunk toward the model's overall error for count-aware Psi), and a flag on sparse cells (fewer
-- than routers/cluster/psi.py's SPARSE_CELL = 10 labelled prompts). The build writes the interval and the flag
-- (routers/psi.cell_frame); rows written before these columns have a null interval and are flagged by n.
-- Grain of psi unchanged: one row per (router_id, model, cluster).
alter table psi add column if not exists error_lo double;
alter table psi add column if not exists error_hi double;
alter table psi add column if not exists sparse boolean;

-- Grain: one row per (model, cluster) of the champion router.
create or replace view model_cluster_errors as
select psi.router_id, psi.model, psi.cluster, psi.loss as error, 1 - psi.loss as accuracy, psi.n as prompts,
       psi.error_lo, psi.error_hi, coalesce(psi.routing_loss, psi.loss) as routing_error,
       coalesce(psi.sparse, psi.n < 10) as sparse
from psi join champion_router as c on c.router_id = psi.router_id;
