"""Evaluation protocol and metrics: hand-checked curve fixtures, the sign test, the trial pipeline."""

from __future__ import annotations


def test_summary_table_marks_significantly_lower_areas() -> None:
    from uniroute.experiments.markdown import sign_test_table, summary_table

    def stats(area: float) -> dict:
        return {"area": area, "area50": area / 2, "qnc": 0.5, "qnc_inf_frac": 0.1, "peak": 0.9, "label": "x"}

    report = {
        "methods": {"zero": stats(0.6), "knn": stats(0.7), "kmeans": stats(0.71)},
        "sign_tests": {
            "zero_vs_knn": {"wins": 0, "losses": 20, "p": 2 * 0.5**20},
            "zero_vs_kmeans": {"wins": 1, "losses": 19, "p": 4e-5},
            "knn_vs_kmeans": {"wins": 8, "losses": 12, "p": 0.5},
        },
    }
    rows = summary_table(report).splitlines()
    # Rows name the method by today's label, not the one a saved report was written with ("x").
    assert rows[2].startswith("| ZeroRouter | 0.6000† |")  # zero: significantly below K-means (no LearnedMap here)
    assert "| 0.7000 |" in rows[3] and "| 0.7100 |" in rows[4]  # not significant: no mark
    assert "| 50.0% | 10% | 0.9000 |" in rows[2]
    # A method no longer known keeps its saved label.
    assert summary_table({"methods": {"mine": stats(0.5)}, "sign_tests": {}}).splitlines()[-1].startswith("| x |")
    table = sign_test_table(report)
    assert "| ZeroRouter vs K-NN | 0 | 20 | 1.9e-06 | B better |" in table
    assert "| K-NN vs UniRoute (K-means) | 8 | 12 | 0.5 | no |" in table
