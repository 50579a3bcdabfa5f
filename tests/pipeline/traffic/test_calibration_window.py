"""The traffic window's defaults are the documented ones (docs/operate.md: 7 days, 500 decisions, the newest
20,000 read). Added where the mutation run (make mutation) found them unpinned."""

from __future__ import annotations

from uniroute.pipeline.serving.calibration import TrafficWindow


def test_the_window_defaults_are_the_documented_ones():
    window = TrafficWindow()
    assert (window.days, window.min_decisions, window.max_decisions) == (7.0, 500, 20_000)
