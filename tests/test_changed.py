"""`make test-fast` picks the tests a change maps to: the mirror of a module, its importers, a test file itself."""

from __future__ import annotations

from tests.changed import ALWAYS, selected_tests


def test_a_module_maps_to_its_mirrored_tests_and_to_every_test_that_imports_it() -> None:
    chosen = selected_tests(["uniroute/routers/rule.py"])
    assert {"tests/routers/test_rule.py", "tests/routers/test_rule_edges.py"} <= set(chosen)  # the mirror
    assert "tests/routers/budgets/test_lambda_path.py" in chosen  # an importer in another folder
    assert all(c.startswith("tests/") and c.endswith(".py") for c in chosen)


def test_a_changed_test_runs_itself_and_unmapped_files_run_the_architecture_test() -> None:
    assert selected_tests(["tests/routers/test_rule.py"]) == ["tests/routers/test_rule.py"]
    assert selected_tests(["Makefile"]) == [ALWAYS]
    assert selected_tests([]) == [ALWAYS]


def test_a_module_imported_by_name_from_its_package_is_found() -> None:
    # `from uniroute.pipeline.pool import registry` names the module without its dotted path
    chosen = selected_tests(["uniroute/pipeline/pool/registry.py"])
    assert any("tests/pipeline" in c for c in chosen) and ALWAYS not in chosen
