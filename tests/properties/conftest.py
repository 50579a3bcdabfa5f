"""Hypothesis for the property tests: no example database (nothing written to the working directory), no
per-example deadline (the cores are shared), a print of the seed to reproduce a failure."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile("uniroute", database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("uniroute")
