"""docs/results/embedders.md is what its generator writes from benchmarks/results/embedding.json, and it says the
switch is pending exactly while the code's build default differs from the rule's choice."""

from __future__ import annotations

import json

import pytest

from benchmarks.quality import embedders_table as table


@pytest.fixture(scope="module")
def result() -> dict:
    return json.loads(table.RESULTS.read_text())


def test_the_page_is_generated_from_the_saved_result(result) -> None:
    # Flipping settings.DEFAULT_BUILD_EMBEDDER without regenerating the page fails here (its decision lines move).
    assert table.PAGE.read_text() == table.render(result)


def test_not_switched_yet_shows_only_while_the_default_differs_from_the_rules_choice(result, monkeypatch) -> None:
    choice = table.fastest_without_loss(result)
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
