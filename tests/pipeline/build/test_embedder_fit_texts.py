"""What a build fits a fitted embedder on (build.matrices.embedder_fit_texts): static-tuned on every prompt text the
store has seen, every split and the traffic recorded with its text, because on prompts outside its fit it agrees
less with its teacher (docs/decisions/0009-static-tuned-fits-every-seen-prompt.md); TF-IDF on the training prompts.
A real store: ingested synthetic logs and decision rows written as the inbox lands them."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import ingest
from tests.synthetic_logs import synthetic_long
from uniroute import store
from uniroute.pipeline.build.matrices import embedder_fit_texts, load_store_index

ROUTED = "a routed prompt recorded with its text, never ingested with results"


def _decision(con, decision: str, prompt: str | None) -> None:
    con.execute("insert into decisions (decision_id, schema_version, decided_at, source, router_id, text_hash, model, "
                "lam, propensity, explored, prompt, source_file, file_hash, ingested_at) "
                "values (?, 1, now(), 'cli', 'r1', 'h', 'a', 0.0, 1.0, false, ?, 'f', 'x', now())", [decision, prompt])


def test_static_tuned_fits_every_seen_text_and_tfidf_the_training_prompts(tmp_path: Path) -> None:
    logs = synthetic_long(n_prompts=60, n_models=3)
    logs.to_parquet(tmp_path / "logs.parquet", index=False)
    db = tmp_path / "uniroute.duckdb"
    ingest(db, tmp_path / "logs.parquet", progress=False)
    with store.opened(db) as con:
        load_store_index(con)  # assigns the splits, as a build does before it embeds
        _decision(con, "d1", ROUTED)
        _decision(con, "d2", None)  # not opted in: no text to fit on
        _decision(con, "d3", logs["prompt"].iloc[0])  # a text already ingested counts once
        tuned = embedder_fit_texts(con, "static-tuned")
        tfidf = embedder_fit_texts(con, "tfidf")
        train = {r[0] for r in con.execute("select p.text from prompts p join prompt_splits s using (prompt_id) "
                                           "where s.split = 'train'").fetchall()}
        assert embedder_fit_texts(con, "minilm-onnx") is None
    seen = sorted({*logs["prompt"].unique(), ROUTED})
    assert tuned == seen  # each text once, in text order: the fit does not depend on ingestion order
    assert tfidf is not None and set(tfidf) == train and 0 < len(train) < len(seen) - 1
