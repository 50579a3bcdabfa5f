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
-- `cosine`: cosine similarity of the two rows of per-cluster losses after each cluster's pool mean is taken out
-- (raw rows mostly say which clusters are hard for everyone); `mean_abs_difference`: their mean absolute
-- difference per cluster; `sampling_difference`: what that mean would be for two draws of one model
-- (sqrt(2/pi) * sd, sd = sqrt(q (1 - q) (1/n_a + 1/n_b)), q the pair's mean accuracy there); `z`: the overall
-- paired difference in standard errors; `chi2`: the sum of squared per-cluster differences in standard errors.
-- A near duplicate (a pool smell: the router tells the two apart by cost only) differs neither overall
-- (|z| <= 1.96) nor in pattern (chi2 within its 95th percentile). uniroute.routers.cluster.similarity computes the
-- same.
create or replace view model_similarity as
with cells as (
    select p.model, p.cluster, p.loss, greatest(p.n, 1) as n
    from psi as p join champion_router as c on c.router_id = p.router_id
),
centred as (  -- each cluster's pool mean loss taken out: what is left distinguishes the models
    select *, loss - avg(loss) over (partition by cluster) as centred_loss from cells
),
paired as (
    select
        a.model as model_a,
        b.model as model_b,
        a.centred_loss as ca,
        b.centred_loss as cb,
        a.loss - b.loss as d,
        sqrt(least(greatest(1 - (a.loss + b.loss) / 2, 0.01), 0.99)
             * (1 - least(greatest(1 - (a.loss + b.loss) / 2, 0.01), 0.99)) * (1.0 / a.n + 1.0 / b.n)) as sd
    from centred as a
    join centred as b on a.cluster = b.cluster and a.model <> b.model
),
pairs as (
    select
        model_a,
        model_b,
        coalesce(sum(ca * cb) / nullif(sqrt(sum(ca * ca) * sum(cb * cb)), 0), 0) as cosine,
        avg(abs(d)) as mean_abs_difference,
        sqrt(2 / pi()) * avg(sd) as sampling_difference,
        sum(d / (sd * sd)) / sqrt(sum(1 / (sd * sd))) as z,
        sum((d / sd) * (d / sd)) as chi2,
        -- 95th percentile of chi-square with K degrees of freedom (Wilson-Hilferty), as routers/cluster/similarity.py
        count(*) * pow(1 - 2 / (9.0 * count(*)) + 1.645 * sqrt(2 / (9.0 * count(*))), 3) as chi2_limit
    from paired
    group by model_a, model_b
)
select *, abs(z) <= 1.96 and chi2 <= chi2_limit as near_duplicate
from pairs;
