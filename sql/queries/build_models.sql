-- Active models that have a cost (per result or default), in name order: the columns of the build matrices.
select model
from build_costed_models
order by model
