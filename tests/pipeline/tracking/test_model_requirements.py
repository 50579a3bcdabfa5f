"""Logging a router skips MLflow's requirement check (its requirements are this environment's versions) and puts
the check back afterwards, for every other caller."""

from __future__ import annotations

import pytest

from tests import needs
from uniroute.pipeline.tracking.model import _model_requirements, requirements_taken_as_pinned

needs.module("mlflow")


def test_the_requirement_check_is_skipped_only_while_a_router_is_logged() -> None:
    import mlflow.pyfunc
    import mlflow.utils.environment
    from mlflow.utils.requirements_utils import _check_requirement_satisfied

    # What makes skipping it safe: the pins are the installed versions, so the check could never warn.
    assert _model_requirements() and all(_check_requirement_satisfied(r) is None for r in _model_requirements())
    modules = (mlflow.utils.environment, mlflow.pyfunc)
    before = [m.warn_dependency_requirement_mismatches for m in modules]
    with requirements_taken_as_pinned():
        assert all(m.warn_dependency_requirement_mismatches(["numpy==0.0.1"]) is None for m in modules)
        assert all(m.warn_dependency_requirement_mismatches is not b for m, b in zip(modules, before, strict=True))
    assert [m.warn_dependency_requirement_mismatches for m in modules] == before
    with pytest.raises(RuntimeError), requirements_taken_as_pinned():
        raise RuntimeError("a failed log_model")
    assert [m.warn_dependency_requirement_mismatches for m in modules] == before
