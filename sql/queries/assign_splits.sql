-- Give every prompt without a split one, once: the split the logs gave, else a deterministic 60/10/30
-- split by md5 of the prompt id (stable across runs and DuckDB versions, unlike hash()).
insert into prompt_splits
select
    p.prompt_id,
    coalesce(
        p.split,
        case
            when (('0x' || substr(md5(p.prompt_id), 1, 8))::ubigint % 100) < 60 then 'train'
            when (('0x' || substr(md5(p.prompt_id), 1, 8))::ubigint % 100) < 70 then 'val'
            else 'test'
        end
    ) as split,
    case when p.split is null then 'hash' else 'logs' end as source,
    now() as assigned_at
from prompts as p
anti join prompt_splits as s on s.prompt_id = p.prompt_id
