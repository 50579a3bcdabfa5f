"""The synthetic log generator: determinism, shapes, the generative truth, topic structure, bounded memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from uniroute import synth
from uniroute.cli import app

COLUMNS = ["prompt_id", "prompt", "model", "score", "cost", "benchmark"]


def _read(path: Path) -> pd.DataFrame:
    return pq.read_table(path).to_pandas()


def test_same_seed_same_bytes_other_seed_differs(tmp_path: Path) -> None:
    a = synth.write_synthetic_logs(tmp_path / "a", n_prompts=1500, n_models=4, n_topics=3, seed=7)
    b = synth.write_synthetic_logs(tmp_path / "b", n_prompts=1500, n_models=4, n_topics=3, seed=7)
    c = synth.write_synthetic_logs(tmp_path / "c", n_prompts=1500, n_models=4, n_topics=3, seed=8)
    for name in ("logs.parquet", "prompts.parquet", "models.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
        assert (tmp_path / "a" / name).read_bytes() != (tmp_path / "c" / name).read_bytes(), name
    assert a.n_rows == b.n_rows == c.n_rows == 6000


def test_shapes_and_long_format(tmp_path: Path) -> None:
    summary = synth.write_synthetic_logs(tmp_path, n_prompts=1100, n_models=3, n_topics=5, seed=0, with_split=True)
    logs = _read(summary.logs_path)
    assert list(logs.columns) == [*COLUMNS, "split"]
    assert len(logs) == summary.n_rows == 3300
    assert logs["prompt_id"].nunique() == 1100 and logs["model"].nunique() == 3
    assert not logs.duplicated(["prompt_id", "model"]).any()
    assert set(logs["score"].unique()) <= {0.0, 1.0}
    assert (logs["cost"] > 0).all()
    assert set(logs["benchmark"]) == set(synth.TOPICS[:5])
    # Split, topic and text are properties of the prompt: the same on every model's row.
    per_prompt = logs.groupby("prompt_id")[["prompt", "benchmark", "split"]].nunique()
    assert (per_prompt == 1).all().all()
    shares = logs.drop_duplicates("prompt_id")["split"].value_counts(normalize=True)
    assert abs(shares["train"] - 0.6) < 0.05 and abs(shares["val"] - 0.1) < 0.03 and abs(shares["test"] - 0.3) < 0.05
    latent = _read(summary.prompts_path)
    assert list(latent.columns) == ["prompt_id", "topic", "difficulty"] and len(latent) == 1100
    merged = logs.drop_duplicates("prompt_id").merge(latent, on="prompt_id")
    assert (merged["benchmark"] == merged["topic"]).all()
    manifest = json.loads(summary.manifest_path.read_text())
    assert [m["model"] for m in manifest["models"]] == sorted(logs["model"].unique())
    assert summary.as_dict()["n_rows"] == 3300 and "3,300 rows" in summary.line()


def test_missing_rate_drops_rows(tmp_path: Path) -> None:
    summary = synth.write_synthetic_logs(tmp_path, n_prompts=2000, n_models=5, n_topics=2, seed=0, missing_rate=0.2)
    logs = _read(summary.logs_path)
    assert len(logs) == summary.n_rows
    assert 0.77 < len(logs) / 10_000 < 0.83


def test_output_does_not_depend_on_chunk_size(tmp_path: Path) -> None:
    small = synth.write_synthetic_logs(tmp_path / "s", n_prompts=3000, n_models=2, n_topics=4, seed=3, chunk_rows=10)
    large = synth.write_synthetic_logs(tmp_path / "l", n_prompts=3000, n_models=2, n_topics=4, seed=3)
    assert pq.ParquetFile(small.logs_path).num_row_groups == 3  # one per block of prompts
    assert pq.ParquetFile(large.logs_path).num_row_groups == 1
    pd.testing.assert_frame_equal(_read(small.logs_path), _read(large.logs_path))


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_text_formats_hold_the_same_rows(tmp_path: Path, fmt: str) -> None:
    ref = _read(synth.write_synthetic_logs(tmp_path / "p", n_prompts=300, n_models=3, n_topics=3, seed=1).logs_path)
    summary = synth.write_synthetic_logs(tmp_path / fmt, n_prompts=300, n_models=3, n_topics=3, seed=1, format=fmt)
    assert summary.logs_path.name == f"logs.{fmt}"
    other = pd.read_csv(summary.logs_path) if fmt == "csv" else pd.read_json(summary.logs_path, lines=True)
    assert list(other.columns) == COLUMNS
    pd.testing.assert_frame_equal(other.astype(ref.dtypes.to_dict()), ref, check_exact=False, rtol=1e-12)


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="n_topics must be between 1 and 16"):
        synth.write_synthetic_logs(tmp_path, n_prompts=10, n_topics=17)
    with pytest.raises(ValueError, match="format must be one of"):
        synth.write_synthetic_logs(tmp_path, n_prompts=10, format="xlsx")
    with pytest.raises(ValueError, match="missing_rate"):
        synth.write_synthetic_logs(tmp_path, n_prompts=10, missing_rate=1.0)


def test_scores_follow_the_true_skills_and_costs_follow_quality(tmp_path: Path) -> None:
    summary = synth.write_synthetic_logs(tmp_path, n_prompts=6000, n_models=8, n_topics=4, seed=5)
    logs = _read(summary.logs_path)
    latent = _read(summary.prompts_path)
    manifest = json.loads(summary.manifest_path.read_text())
    models = {m["model"]: m for m in manifest["models"]}
    frame = logs.merge(latent, on="prompt_id")
    skill = np.array([models[m]["skills"][t] for m, t in zip(frame["model"], frame["topic"], strict=True)])
    frame["expected"] = 1.0 / (1.0 + np.exp(-(skill - frame["difficulty"].to_numpy())))
    cells = frame.groupby(["model", "topic"])[["score", "expected"]].mean()
    # Observed accuracy per (model, topic) tracks the generative probability (about 190 prompts per cell).
    assert np.abs(cells["score"] - cells["expected"]).max() < 0.1
    assert np.corrcoef(cells["score"], cells["expected"])[0, 1] > 0.95
    # Each model scores higher on its best topic than on its worst one.
    for name, m in models.items():
        best, worst = max(m["skills"], key=m["skills"].get), min(m["skills"], key=m["skills"].get)
        if m["skills"][best] - m["skills"][worst] > 0.5:
            assert cells.loc[(name, best), "score"] > cells.loc[(name, worst), "score"], name
    # Costs: near-constant per model, matching the manifest, and ordered like mean skill.
    per_model = logs.groupby("model")["cost"].agg(["mean", "std"])
    for name, m in models.items():
        assert per_model.loc[name, "mean"] == pytest.approx(m["cost"], rel=0.02)
        assert per_model.loc[name, "std"] / per_model.loc[name, "mean"] < 0.1
    mean_skill = pd.Series({n: m["mean_skill"] for n, m in models.items()})
    assert mean_skill.corr(per_model["mean"].apply(np.log), method="spearman") > 0.7


def test_topics_are_recoverable_from_tfidf_embeddings(tmp_path: Path) -> None:
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    from uniroute.embed import fit_tfidf

    summary = synth.write_synthetic_logs(tmp_path, n_prompts=1200, n_models=2, n_topics=6, seed=2)
    prompts = _read(summary.logs_path).drop_duplicates("prompt_id")
    X = fit_tfidf(prompts["prompt"].tolist(), dim=32, seed=0, progress=False).encode(prompts["prompt"].tolist())
    labels = KMeans(n_clusters=6, n_init=10, random_state=0).fit_predict(X)
    assert adjusted_rand_score(prompts["benchmark"], labels) > 0.8


def test_topics_cluster_in_minilm_space(tmp_path: Path) -> None:
    from uniroute.embed import make_embedder

    summary = synth.write_synthetic_logs(tmp_path, n_prompts=120, n_models=1, n_topics=4, seed=4)
    prompts = _read(summary.logs_path)
    X = make_embedder("minilm", progress=False).encode(prompts["prompt"].tolist())  # (120, 384)
    sims = X @ X.T
    np.fill_diagonal(sims, -1.0)
    topic = prompts["benchmark"].to_numpy()
    # The nearest other prompt shares the topic for most prompts (chance: about 1/4).
    assert (topic[sims.argmax(axis=1)] == topic).mean() > 0.85


@pytest.mark.slow
def test_chunked_writing_uses_bounded_memory(tmp_path: Path) -> None:
    """200k prompts x 20 models (4M rows) through 100k-row chunks: peak memory grows far less than the data."""
    script = f"""
import json, re
from pathlib import Path
from uniroute import synth

def status(key):
    return int(re.search(key + r":\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)) * 1024

before = status("VmRSS")
summary = synth.write_synthetic_logs(Path({str(tmp_path)!r}), n_prompts=200_000, n_models=20, n_topics=8, seed=0,
                                     chunk_rows=100_000)
print(json.dumps({{"before": before, "peak": status("VmHWM"), "rows": summary.n_rows}}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=600)
    usage = json.loads(done.stdout.strip().splitlines()[-1])
    assert usage["rows"] == 4_000_000
    parquet = pq.ParquetFile(tmp_path / "logs.parquet")
    assert parquet.metadata.num_rows == 4_000_000 and parquet.metadata.num_row_groups >= 39
    # In memory (Arrow) the rows take about this much; one row group is a fair sample of all of them.
    first = parquet.read_row_group(0)
    data_bytes = first.nbytes * 4_000_000 / first.num_rows
    growth = usage["peak"] - usage["before"]
    assert data_bytes > 400e6
    assert growth < 250e6, f"peak grew by {growth / 1e6:.0f} MB while writing {data_bytes / 1e6:.0f} MB of rows"


def test_cli_synth_json(tmp_path: Path) -> None:
    out = tmp_path / "logs"
    args = ["synth", "--out", str(out), "--prompts", "200", "--models", "3", "--topics", "2", "--seed", "1",
            "--format", "csv", "--split", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["n_rows"] == 600 and summary["logs_path"] == str(out / "logs.csv")
    assert "split" in pd.read_csv(out / "logs.csv").columns
    bad = CliRunner().invoke(app, ["synth", "--out", str(out), "--topics", "40"])
    assert bad.exit_code == 1 and "n_topics must be between 1 and 16" in bad.stderr
