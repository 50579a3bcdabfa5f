"""docs/results/embedders.md is what its generator writes from benchmarks/results/embedding.json, and it says the
switch is pending exactly while the code's build default differs from the rule's choice."""

from __future__ import annotations

import json

import pytest

from tools.pages import embedders_table as table


@pytest.fixture(scope="module")
def result() -> dict:
    return json.loads(table.RESULTS.read_text())


def test_the_page_is_generated_from_the_saved_result(result) -> None:
    # Flipping settings.DEFAULT_BUILD_EMBEDDER without regenerating the page fails here (its decision lines move).
    assert table.PAGE.read_text() == table.render(result)


def test_not_switched_yet_shows_only_while_the_default_differs_from_the_rules_choice(result, monkeypatch) -> None:
    choice = table.fastest_without_loss(result, table.RULE_METHODS)
    assert choice is not None
    monkeypatch.setattr(table, "DEFAULT_BUILD_EMBEDDER", choice)
    assert not any("Not switched yet" in line for line in table.decision(result))
    other = next(name for name in table._names(result) if name != choice)
    monkeypatch.setattr(table, "DEFAULT_BUILD_EMBEDDER", other)
    assert any(line.startswith(f"**Not switched yet**: the code's build default is still `{other}`")
               for line in table.decision(result))


def test_static_keeps_its_100_trial_runs_whatever_the_readme_is_measured_on(result) -> None:
    # The README's runs (docs/results/) follow the build default; static's are kept in benchmarks/results/embedders.
    for dataset, block in table._section(result, "routing").items():
        static = block["embedders"]["static"]
        assert static["trials"] == 100 and static["file"] == f"benchmarks/results/embedders/{dataset}.static.json"


def _ruled(losing: set[str], only: str | None = None) -> dict:
    """A result where every embedder is measured on one dataset and `losing` are significantly below the best (on
    every method, or on the method `only`)."""
    speeds = {"minilm": 2.0, "minilm-onnx": 12.0, "static": 450.0}  # static-tuned: no vectors before its fit
    names = [*speeds, "static-tuned"]
    lost = {"wins": 10, "losses": 60, "p": 1e-6, "trials": 100}
    tied = {"wins": 30, "losses": 30, "p": 1.0, "trials": 100}
    versus = {m: {"best": "minilm", "tests": {n: lost if n in losing and only in (None, m) else tied
                                              for n in names if n != "minilm"}}
              for m in table.ROUTING_METHODS}
    return {"throughput": {"figures": {n: {"prompts_per_s": s} for n, s in speeds.items()}},
            "routing": {"figures": {"d": {"embedders": {n: {"trials": 100} for n in names}, "vs_best": versus}}}}


def test_a_fitted_embedder_ranks_at_its_teachers_build_rate_after_it() -> None:
    # static-tuned embeds at static's rate once fitted, but its build embeds the training prompts through minilm-onnx
    # first: ranked by its own rate it would displace its teacher; without a rate it would raise.
    assert table.fastest_without_loss(_ruled(set())) == "static"
    assert table.fastest_without_loss(_ruled({"static"})) == "minilm-onnx"
    assert table.fastest_without_loss(_ruled({"static", "minilm-onnx"})) == "static-tuned"
    assert table.fastest_without_loss(_ruled({"static", "minilm-onnx", "static-tuned"})) == "minilm"
    assert table.fastest(_ruled(set())) == "static"


def test_the_rule_judges_the_served_router_and_says_what_every_kind_would_name(monkeypatch) -> None:
    # static loses everywhere, minilm-onnx only on a kind auto does not serve: the rule (auto) names minilm-onnx;
    # over every kind it would be its student static-tuned, which the page states, and only when they differ.
    result = _ruled({"static"})
    result["routing"]["figures"]["d"]["vs_best"]["learnedmap"] = _ruled({"static", "minilm-onnx"}, "learnedmap")[
        "routing"]["figures"]["d"]["vs_best"]["learnedmap"]
    monkeypatch.setattr(table, "DEFAULT_BUILD_EMBEDDER", "minilm-onnx")
    lines = table.decision(result)
    assert "Here: **`minilm-onnx`**." in lines[1]
    assert any(line.startswith("Over every router kind") and "would name `static-tuned`" in line for line in lines)
    assert not any(line.startswith("Over every router kind") for line in table.decision(_ruled({"static"})))
