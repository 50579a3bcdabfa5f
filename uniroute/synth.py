"""Synthetic benchmark logs with latent topics, per-model topic skills, prompt difficulty and skill-priced costs.

Generative model (all draws from one seed):
    topic[p] ~ Uniform(topics);   difficulty[p] ~ N(topic_offset[topic[p]], 1)
    skill[m, t] = general[m] + specialty[m, t],  general ~ N(0.6, 0.8), specialty ~ N(0, 0.9)
    score[p, m] ~ Bernoulli(sigmoid(skill[m, topic[p]] - difficulty[p]))
    cost[m] = 10 ** (-3 + 0.9 * z(mean_t skill[m, t]) + N(0, 0.15));  row cost = cost[m] * exp(N(0, 0.05))
    prompt[p] = a question template filled with words of topic[p]'s vocabulary (15% from other topics)
so better models cost more, each model has topics it is good at, and prompt embeddings cluster by topic.

Output (in `out/`): `logs.<parquet|csv|jsonl>` in the long format of DESIGN.md section 3 (prompt-major rows),
`prompts.parquet` (prompt_id, topic, difficulty: the latent truth), and `models.json` (the true skills and
costs). Writing streams through fixed-size blocks of prompts, so 1M prompts x 100 models never sits in
memory, and the content does not depend on the chunk size.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

log = logging.getLogger(__name__)

FORMATS = ("parquet", "csv", "jsonl")
# Prompts per generation block. Each block draws from its own stream np.random.default_rng([seed, 1, block]),
# so the bytes depend on the seed and sizes only, never on how the output is chunked.
BLOCK_PROMPTS = 1024
OTHER_TOPIC_WORD_RATE = 0.15  # some words from other topics, so topics overlap a little, as real ones do
WORDS_PER_PROMPT = (8, 24)    # inclusive range of topic words per prompt

# Plain English words invented for this generator (no third-party text). Topic names double as the
# `benchmark` column, the way MMLU-Pro logs carry a subject category.
TOPIC_WORDS: dict[str, tuple[str, ...]] = {
    "algebra": (
        "equation", "variable", "polynomial", "factor", "root", "quadratic", "linear", "coefficient", "solve",
        "expression", "exponent", "inequality", "matrix", "vector", "determinant", "eigenvalue", "integer",
        "fraction", "simplify", "expand", "identity", "function", "slope", "intercept", "logarithm", "sum",
        "product", "term", "degree", "constant",
    ),
    "biology": (
        "cell", "protein", "enzyme", "gene", "chromosome", "mitosis", "membrane", "organism", "species",
        "evolution", "mutation", "ribosome", "tissue", "photosynthesis", "bacteria", "virus", "immune",
        "neuron", "hormone", "ecosystem", "predator", "nucleus", "inheritance", "allele", "metabolism",
        "respiration", "plant", "fungus", "embryo", "habitat",
    ),
    "chemistry": (
        "molecule", "atom", "bond", "reaction", "acid", "base", "solution", "catalyst", "oxidation", "reduction",
        "electron", "ion", "compound", "element", "isotope", "mole", "titration", "equilibrium", "enthalpy",
        "entropy", "polymer", "solvent", "crystal", "valence", "orbital", "covalent", "salt", "gas", "pressure",
        "concentration",
    ),
    "physics": (
        "force", "mass", "velocity", "acceleration", "momentum", "energy", "friction", "gravity", "wave",
        "frequency", "wavelength", "circuit", "current", "voltage", "resistance", "magnet", "field", "photon",
        "quantum", "relativity", "pendulum", "torque", "inertia", "lens", "refraction", "charge", "capacitor",
        "oscillation", "thermodynamics", "projectile",
    ),
    "history": (
        "empire", "dynasty", "revolution", "treaty", "monarch", "colony", "war", "battle", "parliament",
        "republic", "constitution", "medieval", "ancient", "reform", "rebellion", "crusade", "kingdom",
        "pharaoh", "senate", "emperor", "archive", "chronicle", "conquest", "independence", "peasant",
        "feudal", "renaissance", "invasion", "alliance", "century",
    ),
    "law": (
        "contract", "plaintiff", "defendant", "court", "judge", "statute", "liability", "negligence", "tort",
        "appeal", "verdict", "jury", "evidence", "testimony", "lawsuit", "damages", "precedent", "clause",
        "breach", "property", "lease", "warrant", "custody", "felony", "misdemeanor", "attorney", "injunction",
        "jurisdiction", "ruling", "trust",
    ),
    "economics": (
        "market", "demand", "supply", "price", "inflation", "interest", "tariff", "monopoly", "elasticity",
        "revenue", "profit", "wage", "unemployment", "recession", "currency", "budget", "deficit", "tax",
        "investment", "capital", "dividend", "equilibrium", "subsidy", "consumer", "producer", "output",
        "growth", "bank", "loan", "export",
    ),
    "cooking": (
        "bake", "oven", "flour", "butter", "sugar", "dough", "simmer", "sauce", "garlic", "onion", "roast",
        "whisk", "knead", "spice", "pepper", "salt", "recipe", "skillet", "broth", "vinegar", "marinate",
        "batter", "crust", "herb", "basil", "lemon", "cheese", "noodle", "grill", "dessert",
    ),
    "music": (
        "melody", "harmony", "rhythm", "chord", "tempo", "scale", "octave", "symphony", "orchestra", "violin",
        "piano", "guitar", "drum", "composer", "sonata", "opera", "lyric", "note", "pitch", "key", "minor",
        "major", "concert", "choir", "beat", "measure", "soprano", "conductor", "album", "verse",
    ),
    "sports": (
        "team", "player", "coach", "score", "goal", "league", "match", "tournament", "referee", "stadium",
        "season", "championship", "striker", "defender", "pitch", "racket", "marathon", "sprint", "medal",
        "olympic", "inning", "pitcher", "basket", "dribble", "tackle", "penalty", "serve", "lap", "relay",
        "trophy",
    ),
    "programming": (
        "function", "variable", "loop", "array", "pointer", "compiler", "syntax", "debug", "recursion",
        "algorithm", "stack", "queue", "thread", "module", "class", "object", "interface", "exception", "string",
        "integer", "database", "query", "server", "cache", "binary", "hash", "tree", "graph", "library",
        "runtime",
    ),
    "medicine": (
        "patient", "diagnosis", "symptom", "therapy", "dose", "drug", "infection", "fever", "surgery", "vaccine",
        "clinic", "nurse", "physician", "chronic", "acute", "blood", "heart", "lung", "kidney", "liver",
        "tumor", "antibiotic", "prescription", "allergy", "pain", "injury", "fracture", "pulse", "treatment",
        "disease",
    ),
    "astronomy": (
        "planet", "star", "galaxy", "orbit", "comet", "asteroid", "telescope", "nebula", "supernova", "moon",
        "eclipse", "solar", "lunar", "cosmic", "universe", "constellation", "meteor", "satellite", "redshift",
        "quasar", "pulsar", "crater", "horizon", "light", "year", "dwarf", "giant", "celestial", "spectrum",
        "radiation",
    ),
    "geography": (
        "river", "mountain", "valley", "desert", "ocean", "continent", "island", "peninsula", "climate",
        "latitude", "longitude", "border", "capital", "population", "plateau", "glacier", "delta", "coast",
        "forest", "volcano", "earthquake", "monsoon", "region", "map", "lake", "canyon", "tundra", "savanna",
        "harbor", "city",
    ),
    "literature": (
        "novel", "poem", "author", "character", "plot", "narrator", "metaphor", "stanza", "sonnet", "tragedy",
        "comedy", "chapter", "theme", "protagonist", "villain", "prose", "rhyme", "myth", "fable", "essay",
        "irony", "symbol", "dialogue", "setting", "epic", "ballad", "critic", "genre", "satire", "memoir",
    ),
    "philosophy": (
        "ethics", "virtue", "logic", "argument", "premise", "conclusion", "knowledge", "belief", "truth",
        "reason", "mind", "consciousness", "free", "will", "justice", "duty", "morality", "existence", "being",
        "causation", "paradox", "skeptic", "empiricism", "rationalism", "utility", "dilemma", "meaning",
        "metaphysics", "fallacy", "doctrine",
    ),
}
TOPICS = tuple(TOPIC_WORDS)
# Question frames shared by every topic: they carry no topic signal, like the boilerplate of real prompts.
TEMPLATES = (
    "Question: which statement about the {words} is correct?",
    "Explain how the {words} are related.",
    "Consider the {words}. What follows?",
    "In a short answer, describe the {words}.",
    "Which of the following best fits the {words}?",
    "A student asks about the {words}. Give the answer.",
)


@dataclass(frozen=True)
class SynthSummary:
    """What write_synthetic_logs wrote."""

    out_dir: Path
    logs_path: Path
    prompts_path: Path
    manifest_path: Path
    format: str
    n_prompts: int
    n_models: int
    n_topics: int
    n_rows: int
    seed: int
    seconds: float

    def line(self) -> str:
        """One human-readable line."""
        return (
            f"wrote {self.n_rows:,} rows ({self.n_prompts:,} prompts x {self.n_models} models, "
            f"{self.n_topics} topics, seed {self.seed}) to {self.logs_path} in {self.seconds:.1f} s"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (paths as strings)."""
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class SynthTruth:
    """The latent parameters behind the logs."""

    topics: tuple[str, ...]
    models: tuple[str, ...]
    skills: np.ndarray         # (M, T) skill of each model on each topic
    costs: np.ndarray          # (M,) mean cost per query
    topic_offsets: np.ndarray  # (T,) mean difficulty of each topic's prompts

    def as_dict(self) -> dict[str, Any]:
        """The manifest written to models.json."""
        return {
            "topics": list(self.topics),
            "topic_difficulty_offset": {t: round(float(o), 6) for t, o in zip(self.topics, self.topic_offsets,
                                                                                strict=True)},
            "models": [
                {
                    "model": name,
                    "cost": float(self.costs[m]),
                    "mean_skill": round(float(self.skills[m].mean()), 6),
                    "skills": {t: round(float(s), 6) for t, s in zip(self.topics, self.skills[m], strict=True)},
                }
                for m, name in enumerate(self.models)
            ],
        }


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def synthetic_truth(n_models: int, n_topics: int, seed: int) -> SynthTruth:
    """Latent topics, model skills (M, T) and costs (M,) for a seed."""
    if not 1 <= n_topics <= len(TOPICS):
        raise ValueError(f"n_topics must be between 1 and {len(TOPICS)} (the built-in vocabularies), got {n_topics}")
    if n_models < 1:
        raise ValueError(f"n_models must be >= 1, got {n_models}")
    rng = np.random.default_rng([seed, 0])
    general = rng.normal(0.6, 0.8, size=n_models)                      # (M,)
    specialty = rng.normal(0.0, 0.9, size=(n_models, n_topics))        # (M, T)
    skills = general[:, None] + specialty                              # (M, T)
    mean_skill = skills.mean(axis=1)
    z = (mean_skill - mean_skill.mean()) / (mean_skill.std() if n_models > 1 and mean_skill.std() > 0 else 1.0)
    # Price follows quality on a log scale (about 1.5 decades across the pool), with some models over- or
    # under-priced for what they deliver, as in real price lists.
    costs = 10.0 ** (-3.0 + 0.9 * z + rng.normal(0.0, 0.15, size=n_models))
    topic_offsets = rng.normal(0.0, 0.5, size=n_topics)
    width = max(2, len(str(n_models - 1)))
    models = tuple(f"synth-llm-{m:0{width}d}" for m in range(n_models))
    return SynthTruth(TOPICS[:n_topics], models, skills, costs, topic_offsets)


def _prompt_texts(rng: np.random.Generator, topics: np.ndarray, n_topics: int) -> list[str]:
    """One generated question per topic index in `topics` (b,); draws are vectorised over the block."""
    vocab = [TOPIC_WORDS[t] for t in TOPICS[:n_topics]]
    words = np.array([w for v in vocab for w in v], dtype=object)              # (V,) all topics' words
    sizes = np.array([len(v) for v in vocab])                                  # (T,)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])                     # (T,) first word of each topic
    lo, hi = WORDS_PER_PROMPT
    b = len(topics)
    lengths = rng.integers(lo, hi + 1, size=b)                                 # (b,)
    templates = rng.integers(0, len(TEMPLATES), size=b)                        # (b,)
    # Each word comes from the prompt's own topic, or with a small probability from a random other one.
    other = rng.random((b, hi)) < OTHER_TOPIC_WORD_RATE                        # (b, hi)
    word_topic = np.where(other, rng.integers(0, n_topics, size=(b, hi)), topics[:, None])  # (b, hi)
    word_ids = offsets[word_topic] + (rng.random((b, hi)) * sizes[word_topic]).astype(np.int64)  # (b, hi)
    chosen = words[word_ids]                                                   # (b, hi) words
    return [
        TEMPLATES[t].format(words=" ".join(row[:n])) for row, n, t in zip(chosen, lengths, templates, strict=True)
    ]


def _blocks(truth: SynthTruth, n_prompts: int, seed: int, with_split: bool, missing_rate: float) -> Iterator[
    tuple[pa.Table, pa.Table]
]:
    """(long-format rows, latent prompt table) per block of BLOCK_PROMPTS prompts, in prompt order."""
    n_models, n_topics = truth.skills.shape
    models = pa.array(truth.models, pa.string())
    width = max(6, len(str(n_prompts - 1)))
    for block in range(math.ceil(n_prompts / BLOCK_PROMPTS)):
        rng = np.random.default_rng([seed, 1, block])
        start = block * BLOCK_PROMPTS
        b = min(BLOCK_PROMPTS, n_prompts - start)
        topics = rng.integers(0, n_topics, size=b)                                    # (b,)
        difficulty = truth.topic_offsets[topics] + rng.normal(0.0, 1.0, size=b)      # (b,)
        texts = _prompt_texts(rng, topics, n_topics)
        p_correct = _sigmoid(truth.skills[:, topics].T - difficulty[:, None])         # (b, M)
        scores = (rng.random((b, n_models)) < p_correct).astype(np.float64)          # (b, M)
        costs = truth.costs[None, :] * np.exp(rng.normal(0.0, 0.05, size=(b, n_models)))  # (b, M)
        # Drawn even when missing_rate is 0, so the other draws do not depend on it.
        keep = rng.random((b, n_models)) >= missing_rate                              # (b, M)
        ids = [f"synth-{p:0{width}d}" for p in range(start, start + b)]
        prompt_rows = np.repeat(np.arange(b), n_models)[keep.reshape(-1)]            # row -> prompt in block
        model_rows = np.tile(np.arange(n_models), b)[keep.reshape(-1)]               # row -> model
        # Dictionary arrays: each prompt's text is stored once per block, not once per model.
        prompt_ids = pa.DictionaryArray.from_arrays(pa.array(prompt_rows.astype(np.int32)), pa.array(ids))
        prompt_text = pa.DictionaryArray.from_arrays(pa.array(prompt_rows.astype(np.int32)), pa.array(texts))
        benchmark = pa.DictionaryArray.from_arrays(
            pa.array(topics[prompt_rows].astype(np.int32)), pa.array(truth.topics, pa.string())
        )
        columns = {
            "prompt_id": prompt_ids.cast(pa.string()),
            "prompt": prompt_text.cast(pa.string()),
            "model": models.take(pa.array(model_rows)),
            "score": pa.array(scores.reshape(-1)[keep.reshape(-1)]),
            "cost": pa.array(costs.reshape(-1)[keep.reshape(-1)]),
            "benchmark": benchmark.cast(pa.string()),
        }
        split_names = np.array(["train", "val", "test"], dtype=object)
        splits = split_names[np.searchsorted(np.array([0.6, 0.7]), rng.random(b), side="right")]
        if with_split:
            columns["split"] = pa.array(splits[prompt_rows], pa.string())
        latent = pa.table({
            "prompt_id": pa.array(ids, pa.string()),
            "topic": pa.array([truth.topics[t] for t in topics], pa.string()),
            "difficulty": pa.array(difficulty),
        })
        yield pa.table(columns), latent


class _Sink:
    """Appends tables to one file in the chosen format."""

    def __init__(self, path: Path, fmt: str, schema: pa.Schema) -> None:
        self.path, self.fmt, self.schema = path, fmt, schema
        if fmt == "parquet":
            import pyarrow.parquet as pq

            self.writer: Any = pq.ParquetWriter(path, schema, compression="zstd")
        elif fmt == "csv":
            import pyarrow.csv as pcsv

            self.writer = pcsv.CSVWriter(path, schema)
        else:
            self.writer = path.open("w", encoding="utf-8")

    def write(self, table: pa.Table) -> None:
        if self.fmt == "jsonl":
            # One JSON object per line; pyarrow has no JSON writer and pandas' is slow to import repeatedly.
            for row in table.to_pylist():
                self.writer.write(json.dumps(row, ensure_ascii=False) + "\n")
        else:
            self.writer.write_table(table)

    def close(self) -> None:
        self.writer.close()


def write_synthetic_logs(
    out: Path,
    n_prompts: int = 5000,
    n_models: int = 12,
    n_topics: int = 8,
    seed: int = 0,
    format: str = "parquet",
    chunk_rows: int = 100_000,
    with_split: bool = False,
    missing_rate: float = 0.0,
) -> SynthSummary:
    """Write synthetic long-format logs, the latent prompt table and the true skills into `out`."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    if n_prompts < 1:
        raise ValueError(f"n_prompts must be >= 1, got {n_prompts}")
    if not 0.0 <= missing_rate < 1.0:
        raise ValueError(f"missing_rate must be in [0, 1), got {missing_rate}")
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    import pyarrow.parquet as pq

    started = time.perf_counter()
    truth = synthetic_truth(n_models, n_topics, seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    logs_path = out / f"logs.{format}"
    prompts_path = out / "prompts.parquet"
    manifest_path = out / "models.json"
    fields = [("prompt_id", pa.string()), ("prompt", pa.string()), ("model", pa.string()),
              ("score", pa.float64()), ("cost", pa.float64()), ("benchmark", pa.string())]
    if with_split:
        fields.append(("split", pa.string()))
    schema = pa.schema(fields)
    latent_schema = pa.schema([("prompt_id", pa.string()), ("topic", pa.string()), ("difficulty", pa.float64())])

    # Blocks are gathered into output chunks of about chunk_rows rows (at least one block), so the
    # Parquet row groups are a sensible size while memory holds one chunk at a time.
    blocks_per_chunk = max(1, chunk_rows // (BLOCK_PROMPTS * n_models))
    sink = _Sink(logs_path, format, schema)
    latent_writer = pq.ParquetWriter(prompts_path, latent_schema, compression="zstd")
    n_rows = 0
    pending: list[pa.Table] = []
    try:
        for rows, latent in _blocks(truth, n_prompts, seed, with_split, missing_rate):
            pending.append(rows)
            latent_writer.write_table(latent)
            if len(pending) == blocks_per_chunk:
                chunk = pa.concat_tables(pending)
                sink.write(chunk)
                n_rows += chunk.num_rows
                pending = []
                log.info("synth: %d rows written", n_rows)
        if pending:
            chunk = pa.concat_tables(pending)
            sink.write(chunk)
            n_rows += chunk.num_rows
    finally:
        sink.close()
        latent_writer.close()

    manifest = {
        "generator": "uniroute.synth",
        "seed": seed,
        "n_prompts": n_prompts,
        "n_models": n_models,
        "n_topics": n_topics,
        "n_rows": n_rows,
        "format": format,
        "with_split": with_split,
        "missing_rate": missing_rate,
        "score_model": "score ~ Bernoulli(sigmoid(skills[model][topic] - difficulty[prompt]))",
        **truth.as_dict(),
    }
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    summary = SynthSummary(
        out_dir=out, logs_path=logs_path, prompts_path=prompts_path, manifest_path=manifest_path, format=format,
        n_prompts=n_prompts, n_models=n_models, n_topics=n_topics, n_rows=n_rows, seed=seed,
        seconds=round(time.perf_counter() - started, 3),
    )
    log.info("%s", summary.line())
    return summary
