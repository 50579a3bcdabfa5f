"""Hypothesis for the property tests: no example database (nothing written to the working directory), no
per-example deadline (the cores are shared), the blob to reproduce a failure printed; in CI the examples are
derandomized, so a CI run is repeatable (a developer's runs keep exploring new examples)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

from tests import needs

settings.register_profile("uniroute", database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("uniroute-ci", parent=settings.get_profile("uniroute"), derandomize=True)
settings.load_profile("uniroute-ci" if needs.in_ci() else "uniroute")
