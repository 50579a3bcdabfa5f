"""Evaluation protocol and metrics: hand-checked curve fixtures, the sign test, the trial pipeline."""

from __future__ import annotations

import pytest

from uniroute.selection.statistics import sign_test


# ---- sign test --------------------------------------------------------------------------------------------
def test_sign_test_counts_and_exact_p() -> None:
    a = [1, 2, 3, 4, 5, 6, 9]
    b = [0, 0, 0, 0, 0, 7, 9]  # last pair tied: dropped
    res = sign_test(a, b)
    assert res["wins"] == 5 and res["losses"] == 1
    # two-sided exact binomial, n = 6: P(X <= 1) + P(X >= 5) = (1 + 6 + 6 + 1) / 64
    assert res["p"] == pytest.approx(14 / 64)
    assert sign_test([1, 1], [1, 1]) == {"wins": 0, "losses": 0, "p": 1.0}
    assert sign_test([1] * 20, [0] * 20)["p"] == pytest.approx(2 * 0.5**20)
    with pytest.raises(ValueError, match="equal shapes"):
        sign_test([1, 2], [1])
