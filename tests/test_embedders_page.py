"""docs/results/embedders.md is what its generator writes from benchmarks/results/embedding.json, it says the
switch is pending exactly while the code's build default differs from the rule's choice, and the rule (at most 2% of
the ZeroRouter-to-MLP gap below the best embedder on every dataset) is read as
docs/decisions/0010-build-embedder-share-of-gap.md states."""

from __future__ import annotations

import json

import pytest

from tools.pages import embedder_share_rule as rule
from tools.pages import embedders_table as table


@pytest.fixture(scope="module")
def result() -> dict:
    return json.loads(table.RESULTS.read_text())


def test_the_page_is_generated_from_the_saved_result(result) -> None:
    # Flipping settings.DEFAULT_BUILD_EMBEDDER without regenerating the page fails here (its decision lines move).
    assert table.PAGE.read_text() == table.render(result)


def test_not_switched_yet_shows_only_while_the_default_differs_from_the_rules_choice(result, monkeypatch) -> None:
    choice = table.fastest_within_share(result)
    assert choice is not None
    monkeypatch.setattr(table, "DEFAULT_BUILD_EMBEDDER", choice)
    assert not any("Not switched yet" in line for line in table.decision(result))
    other = next(name for name in table._names(result) if name != choice)
    monkeypatch.setattr(table, "DEFAULT_BUILD_EMBEDDER", other)
    assert any(line.startswith(f"**Not switched yet**: the code's build default is still `{other}`")
               for line in table.decision(result))


def test_static_keeps_its_100_trial_runs_whatever_the_readme_is_measured_on(result) -> None:
    # The README's runs (docs/results/) follow the build default; static's are kept in benchmarks/results/embedders.
    for dataset, block in rule.result_figures(result, "routing").items():
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


def test_the_significance_reading_judges_the_served_router_and_says_what_every_kind_would_name(monkeypatch) -> None:
    # static loses everywhere, minilm-onnx only on a kind auto does not serve: the sign-test reading beside the rule
    # (auto) names minilm-onnx; over every kind it would be its student static-tuned, which the page states, and only
    # when they differ.
    result = _ruled({"static"})
    result["routing"]["figures"]["d"]["vs_best"]["learnedmap"] = _ruled({"static", "minilm-onnx"}, "learnedmap")[
        "routing"]["figures"]["d"]["vs_best"]["learnedmap"]
    monkeypatch.setattr(table, "DEFAULT_BUILD_EMBEDDER", "minilm-onnx")
    lines = table.decision(result, {})
    assert any(line.startswith("Beside it, the significance reading") and line.endswith("names `minilm-onnx`.")
               for line in lines)
    assert any(line.startswith("Over every router kind") and "would name `static-tuned`" in line for line in lines)
    assert not any(line.startswith("Over every router kind") for line in table.decision(_ruled({"static"}), {}))


def _shared(shares: dict[str, list[float | None]]) -> tuple[dict, dict]:
    """(result, shares) over len(lists) datasets where `auto` of each embedder named loses that share of the gap to
    `minilm` (None: not measured there); the others are level with it."""
    speeds = {"minilm": 2.0, "minilm-onnx": 12.0, "static": 450.0}
    names = [*speeds, "static-tuned"]
    datasets = [f"d{i}" for i in range(len(next(iter(shares.values()))))]
    ruled = {}
    for i, dataset in enumerate(datasets):
        rows = {n: {"share": share, "se": 0.025, "gap": 0.02, "trials": 100, "wins": 45, "losses": 50, "p": 0.7}
                for n in names[1:] if (share := shares.get(n, [0.0] * len(datasets))[i]) is not None}
        ruled[dataset] = {"best": "minilm", "gap_from": "minilm-onnx", "shares": rows}
    result = {"throughput": {"figures": {n: {"prompts_per_s": s} for n, s in speeds.items()}},
              "routing": {"figures": {d: {"embedders": {n: {"trials": 100} for n in names}} for d in datasets}}}
    return result, ruled


def test_the_share_rule_names_the_fastest_within_two_percent_on_every_dataset() -> None:
    # At the limit passes, just over it fails, on any one dataset; a fitted embedder ranks after its teacher.
    assert table.fastest_within_share(*_shared({"static": [0.0, 0.02]})) == "static"
    assert table.fastest_within_share(*_shared({"static": [0.0, 0.021]})) == "minilm-onnx"
    assert table.fastest_within_share(*_shared({"static": [0.05, 0.0], "minilm-onnx": [0.0, 0.03]})) == \
        "static-tuned"
    assert table.fastest_within_share(
        *_shared({"static": [0.05, 0.0], "minilm-onnx": [0.0, 0.03], "static-tuned": [0.03, 0.0]})) == "minilm"


def test_the_share_rule_needs_a_measurement_on_every_dataset() -> None:
    assert table.fastest_within_share(*_shared({"static": [0.0, None]})) == "minilm-onnx"


def test_the_frontier_table_shows_each_share_and_the_verdict() -> None:
    lines = table.frontier_table(*_shared({"static": [0.0, 0.03]}))
    static = next(line for line in lines if line.startswith("| `static` "))
    assert "3.0% ± 2.5% (45-50 of 100)" in static and static.endswith("| no |")
    assert next(line for line in lines if line.startswith("| `minilm` ")).count("best") == 2


def test_the_share_is_the_paired_mean_loss_over_common_trials_in_units_of_the_same_trials_gap() -> None:
    # Trial t is one split for every embedder: a 3-trial run pairs with the first 3 of a 4-trial one, and the gap
    # is averaged over those 3 trials too (the fourth trial's huge gap would otherwise shrink the share).
    row = rule.paired_share([0.50, 0.60, 0.40], [0.51, 0.61, 0.41, 0.90], [0.05, 0.05, 0.05, 5.0])
    assert row["trials"] == 3 and abs(row["share"] - 0.2) < 1e-9 and abs(row["gap"] - 0.05) < 1e-12


def test_the_gap_is_the_best_embedders_own_mlp_else_the_build_defaults(monkeypatch) -> None:
    monkeypatch.setattr(table, "DEFAULT_BUILD_EMBEDDER", "minilm-onnx")
    areas = {"minilm": {"zero": [0.5], "auto": [0.6]}, "minilm-onnx": {"zero": [0.5], "mlp": [0.52]},
             "static": {"zero": [0.5], "mlp": [0.53]}}
    assert rule.zero_to_mlp_gap(areas, "static")[0] == "static"
    whose, gap = rule.zero_to_mlp_gap(areas, "minilm")
    assert whose == "minilm-onnx" and abs(gap[0] - 0.02) < 1e-12


def test_the_pages_shares_are_read_from_the_named_evaluation_files(result) -> None:
    # Every embedder of every dataset has a share (or is the best), each paired over 100 trials.
    shares = rule.served_shares(result)
    for dataset, block in shares.items():
        assert set(block["shares"]) | {block["best"]} == set(table._names(result)), dataset
        assert all(row["trials"] == 100 for row in block["shares"].values())


def test_the_static_tuned_ridge_table_reads_each_run_as_its_benchmark_paired_it() -> None:
    # static_tuned_routing.py pairs each run with minilm-onnx's stored trials itself; the decision's table
    # (tools/pages/static_tuned_ridge_table.py) must give the same share, sign and wins-losses, or its other columns,
    # read the same way, are not the rule's reading either.
    from tools.pages import static_tuned_ridge_table as ridge

    paths = sorted(ridge.RUNS.glob("*.json"))
    assert paths
    for path in paths:
        m = ridge.measures(path)
        assert m["vs_default"]["share"] == pytest.approx(m["run"]["share_of_gap_below_minilm_onnx"], rel=1e-9)
        assert [m["vs_default"]["wins"], m["vs_default"]["losses"]] == m["run"]["wins_losses_vs_minilm_onnx"]
        assert (m["vs_own"] is None) == (m["run"]["scope"] == "own")
