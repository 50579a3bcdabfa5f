"""`uniroute route --explain` for people: one table per prompt of the argmin's terms, best first."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from uniroute.routers.explain import EXPLAIN_COLUMNS

PROMPT_CHARS = 60  # a prompt is shown cut to this many characters: the table is what matters


def _number(value: float | None) -> str:
    return "" if value is None else format(value, ".6g")


def explanation_text(decisions: pd.DataFrame, texts: Sequence[str]) -> str:
    """Per prompt, a heading (prompt, chosen model, cluster, lambda) and its candidates' terms by rank; the
    numbers printed to 6 significant digits (`--json` carries them exactly)."""
    blocks = []
    for row, text in zip(decisions.itertuples(index=False), texts, strict=True):
        shown = text if len(text) <= PROMPT_CHARS else text[: PROMPT_CHARS - 3] + "..."
        cluster = "" if pd.isna(row.cluster) else f", cluster {row.cluster}"
        budget = "" if row.budget is None or pd.isna(row.budget) else f", budget {row.budget:g}"
        max_latency = getattr(row, "max_latency", None)
        cap = ("" if max_latency is None or pd.isna(max_latency) else
               f"; max latency {max_latency:g} s: models with a recorded median latency above it left out")
        head = (f"prompt {row.prompt_index} {shown!r} -> {row.model} "
                f"(lambda {row.lam:.6g}{budget}{cluster}; total = expected_error + lambda x cost, rank 1 chosen{cap})")
        terms = pd.DataFrame(row.explain, columns=list(EXPLAIN_COLUMNS))
        table = pd.DataFrame({
            "rank": terms["rank"], "model": terms["model"],
            "expected_error": terms["expected_error"].map(_number),
            "95% interval": [("" if lo is None else f"[{_number(lo)}, {_number(hi)}]")
                             for lo, hi in zip(terms["error_lo"], terms["error_hi"], strict=True)],
            "cost": terms["cost"].map(_number), "lambda x cost": terms["lam_cost"].map(_number),
            "total": terms["total"].map(_number),
            "latency s": [("unknown" if v is None or pd.isna(v) else _number(v)) for v in terms["latency_s"]],
        })
        blocks.append(head + "\n" + table.to_string(index=False))
    return "\n\n".join(blocks)
