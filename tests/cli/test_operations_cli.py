"""The operations layer through the command line: the same outcome and words as the flows, one-line input errors."""

from __future__ import annotations

from typer.testing import CliRunner

from tests.operations_cases import EARLY, EARLY_LINE, early_results
from uniroute import store
from uniroute.cli import app

runner = CliRunner()


def test_onboarding_before_the_first_build_stores_the_results_and_says_when_they_join(home, tmp_path, monkeypatch):
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    result = runner.invoke(app, ["onboard", "--results", str(early_results(tmp_path))], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == EARLY_LINE
    with store.opened(home / "uniroute.duckdb", read_only=True) as con:
        stored = con.execute("select count(*) from results where model = ?", [EARLY]).fetchone()[0]
        detail = con.execute("select detail from operations where kind = 'onboard'").fetchone()[0]
    assert stored == 3 and detail == EARLY_LINE  # the results stay, and the operations log says the same line
    again = runner.invoke(app, ["onboard", "--results", str(early_results(tmp_path)), "--json"])
    assert again.exit_code == 0 and '"skipped": true' in again.stdout


def test_a_bad_setting_is_one_line_naming_the_variable(home, monkeypatch):
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    monkeypatch.setenv("UNIROUTE_SEED", "abc")
    result = runner.invoke(app, ["build"], catch_exceptions=False)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert lines == ["error: UNIROUTE_SEED='abc': Input should be a valid integer, unable to parse string as an "
                     "integer; set it to a valid value or unset it"], result.stderr


def test_build_kinds_come_from_the_environment_as_a_list(home, monkeypatch):
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    monkeypatch.setenv("UNIROUTE_BUILD_KINDS", "kmeans, nope")
    result = runner.invoke(app, ["build"], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.stderr.strip() == "error: unknown router kinds ['nope']: choose from kmeans, kmeans_shrunk, " \
                                    "learnedmap, knn, quality_rule, kmeans_hier"
    assert not (home / "uniroute.duckdb").exists()  # decided before the store is opened


def test_every_command_is_loaded_from_the_module_that_registers_it():
    from typer.main import get_command_name

    from uniroute.cli.app import COMMAND_MODULES, MODULE_ORDER, _load

    _load(*MODULE_ORDER)
    registered = {(info.name or get_command_name(info.callback.__name__)): info.callback.__module__
                  for info in app.registered_commands}
    registered.update({str(g.name): "uniroute.cli.intake" for g in app.registered_groups})  # models: intake.py
    assert {name: f"uniroute.cli.{module}" for name, module in COMMAND_MODULES.items()} == registered
