-- Pairwise preferences, the attribute annotator's cache, and the LLM-similarity view.

-- Grain: one row per battle, (prompt_id, unordered pair of models): two models' answers to one prompt and
-- which was preferred (Chatbot Arena convention). Uniqueness of the battle is enforced by ingestion's
-- anti-join, as for results. Append-only.
create table if not exists battles (
    prompt_id   varchar not null,
    model_a     varchar not null,
    model_b     varchar not null,
    winner      varchar check (winner in ('model_a', 'model_b', 'tie', 'tie (bothbad)')),  -- null: a judge's
                                       -- continuous preference was given instead
    preference  double not null check (preference >= 0 and preference <= 1),  -- outcome for model_a: 1 won,
                                       -- 0 lost, 0.5 either tie, or the judge's probability that a was better
    source_file varchar not null,
    file_hash   varchar not null,
    ingested_at timestamp not null,
    check (model_a <> model_b)
);

-- Grain: one row per (text_hash, annotator_id): an annotator's answer about one prompt text (the prompt
-- attributes of uniroute.embed.attributes), so a text is annotated once per annotator, ever.
create table if not exists prompt_attributes (
    text_hash    varchar not null,      -- sha256 hex of the prompt text (prompts.text_hash)
    annotator_id varchar not null,      -- endpoint model and instructions: a different annotator asks again
    attributes   varchar not null,      -- JSON object: attribute name -> 0 or 1, as parsed from the answer
    answer       varchar not null,      -- the answer as the endpoint gave it (for audit)
    answered_at  timestamp not null
);

-- Grain: one row per ordered pair of distinct models of the champion router: how alike their Psi rows are.
-- `cosine`: cosine similarity of the two rows of per-cluster losses; `mean_abs_difference`: their mean absolute
-- difference per cluster; `sampling_difference`: what that mean would be for two draws of one model, from
-- the prompts (or battles) behind each cell (sqrt(2/pi) * sqrt(q (1 - q) (1/n_a + 1/n_b)), q the pair's mean
-- accuracy there). A near duplicate (a pool smell: the router tells the two apart by cost only) differs by no
-- more than sampling would. uniroute.routers.cluster.similarity computes the same numbers.
create or replace view model_similarity as
with cells as (
    select p.model, p.cluster, p.loss, greatest(p.n, 1) as n
    from psi as p join champion_router as c on c.router_id = p.router_id
),
pairs as (
    select
        a.model as model_a,
        b.model as model_b,
        sum(a.loss * b.loss) / nullif(sqrt(sum(a.loss * a.loss) * sum(b.loss * b.loss)), 0) as cosine,
        avg(abs(a.loss - b.loss)) as mean_abs_difference,
        sqrt(2 / pi()) * avg(sqrt((1 - (a.loss + b.loss) / 2) * ((a.loss + b.loss) / 2) * (1.0 / a.n + 1.0 / b.n)))
            as sampling_difference
    from cells as a
    join cells as b on a.cluster = b.cluster and a.model <> b.model
    group by a.model, b.model
)
select *, mean_abs_difference <= sampling_difference as near_duplicate
from pairs;
