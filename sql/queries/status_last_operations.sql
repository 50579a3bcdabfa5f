-- The newest run of each operation kind (build, onboard, publish, ingest, ...) with its outcome.
select kind, status, started, finished, detail
from operations
qualify row_number() over (partition by kind order by started desc) = 1
order by started desc
