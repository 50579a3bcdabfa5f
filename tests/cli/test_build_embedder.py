"""The embedder split (docs/decisions/0001-build-embedder-default.md): builds and `uniroute evaluate` read
UNIROUTE_BUILD_EMBEDDER, interactive work UNIROUTE_EMBEDDER; one switch set alone still sets both."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tests.synthetic_logs import synthetic_long
from uniroute import settings as settings_module
from uniroute.cli import app
from uniroute.settings import Settings


def test_build_embedder_follows_its_own_switch_then_the_interactive_one_then_the_default(monkeypatch) -> None:
    monkeypatch.delenv("UNIROUTE_EMBEDDER", raising=False)
    monkeypatch.delenv("UNIROUTE_BUILD_EMBEDDER", raising=False)
    assert Settings().build_embedder_name == settings_module.DEFAULT_BUILD_EMBEDDER
    # a default for builds other than the interactive one applies only where neither switch is set
    monkeypatch.setattr(settings_module, "DEFAULT_BUILD_EMBEDDER", "minilm-onnx")
    assert (Settings().embedder, Settings().build_embedder_name) == ("static", "minilm-onnx")
    monkeypatch.setenv("UNIROUTE_EMBEDDER", "tfidf")  # one switch, as before the split: both follow it
    assert (Settings().embedder, Settings().build_embedder_name) == ("tfidf", "tfidf")
    monkeypatch.setenv("UNIROUTE_BUILD_EMBEDDER", "minilm")
    assert (Settings().embedder, Settings().build_embedder_name) == ("tfidf", "minilm")


def test_evaluate_embeds_with_the_build_embedder(tmp_path, home, monkeypatch) -> None:
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    # The interactive switch names no embedder: evaluate fails at once if it reads that one instead.
    monkeypatch.setenv("UNIROUTE_EMBEDDER", "nope")
    monkeypatch.setenv("UNIROUTE_BUILD_EMBEDDER", "tfidf")
    data = tmp_path / "logs.csv"
    synthetic_long(n_prompts=40).to_csv(data, index=False)
    out = tmp_path / "o.json"
    result = CliRunner().invoke(app, ["evaluate", "--data", str(data), "--out", str(out), "--trials", "1",
                                      "--workers", "0", "--methods", "zero,kmeans"])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["embedder_id"].startswith("tfidf")
