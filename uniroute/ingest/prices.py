"""Prices with dates (`uniroute models set-price`, `set-cost`): what a model costs from a date on, per million
input and output tokens or per call, checked and recorded in the `prices` table (sql/schema/014_prices.sql).

One source of truth for model-level costs: `prices`. `set-cost MODEL C` is the undated per-call price (valid from
UNDATED), which is what the old per-model default cost meant; models.default_cost is no longer read or written.
Routing's c(m) (sql/queries/model_val_costs.sql) is the per-call price in force, else the logged validation costs;
a price file has rows `model`, `from` and either `input` and `output` (per million tokens) or `per_call`.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from uniroute import store
from uniroute.ingest.checks import COST_CEILING
from uniroute.ingest.staging import IngestError

UNDATED = date(1970, 1, 1)  # `set-cost`: a price in force from before any log
TOKEN_PRICE_CEILING = 1e6  # per million tokens: beyond any real price, as COST_CEILING is per query


@dataclass(frozen=True)
class Price:
    """One model's price from a date: per million input and output tokens, or per call (exactly one kind)."""

    model: str
    valid_from: date
    input_per_mtok: float | None = None
    output_per_mtok: float | None = None
    per_call: float | None = None

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """The real cost of one call at this price (the rule of sql/schema's priced_call_cost macro), or None when
        a token price meets unknown tokens."""
        if self.per_call is not None:
            return float(self.per_call)
        if self.input_per_mtok is None or self.output_per_mtok is None or input_tokens is None \
                or output_tokens is None:
            return None
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6

    def line(self) -> str:
        """E.g. "gpt-x: 2.5 in / 10 out per million tokens from 2026-01-01"."""
        what = (f"{self.per_call:g} per call" if self.per_call is not None
                else f"{self.input_per_mtok:g} in / {self.output_per_mtok:g} out per million tokens")
        when = "" if self.valid_from == UNDATED else f" from {self.valid_from.isoformat()}"
        return f"{self.model}: {what}{when}"


def _amount(where: str, name: str, value: Any, ceiling: float) -> float:
    """A price amount, checked; IngestError naming where, which amount and the value."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise IngestError(f"{where}: {name} {json.dumps(value, default=str)} is not a number")
    try:
        number = float(value)
    except ValueError:
        raise IngestError(f"{where}: {name} {json.dumps(value)} is not a number") from None
    if not (math.isfinite(number) and 0 <= number <= ceiling):
        raise IngestError(f"{where}: {name} {value!r} must be a finite number in [0, {ceiling:g}]")
    return number


def _day(where: str, value: Any) -> date:
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value).strip())
    except ValueError:
        raise IngestError(f"{where}: `from` {json.dumps(value, default=str)} is not a date (YYYY-MM-DD)") from None


def _given(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value)) and str(value).strip() != ""


def checked_price(where: str, model: Any, valid_from: Any, input_per_mtok: Any = None, output_per_mtok: Any = None,
                  per_call: Any = None) -> Price:
    """A Price from what a user gave, or IngestError in one line naming where and the value: a model, a date, and
    input and output token prices or a per-call price."""
    if not _given(model):
        raise IngestError(f"{where}: no model named")
    if not _given(valid_from):
        raise IngestError(f"{where} ({model}): no `from` date: a price is valid from a date (YYYY-MM-DD)")
    tokens = [_given(input_per_mtok), _given(output_per_mtok)]
    if _given(per_call) == any(tokens) or (any(tokens) and not all(tokens)):
        raise IngestError(f"{where} ({model}): give input and output prices per million tokens, or a per-call "
                          "price, not both and not one token price alone")
    if _given(per_call):
        return Price(str(model), _day(where, valid_from), per_call=_amount(where, "per-call price", per_call,
                                                                           COST_CEILING))
    return Price(str(model), _day(where, valid_from),
                 _amount(where, "input price", input_per_mtok, TOKEN_PRICE_CEILING),
                 _amount(where, "output price", output_per_mtok, TOKEN_PRICE_CEILING))


def prices_from_file(path: Path) -> list[Price]:
    """The prices of a file: JSON lines or a JSON list of objects, or a CSV, with columns model, from, and input and
    output, or per_call; IngestError naming the file, the row and the value."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise IngestError(f"{path}: cannot read the price file ({exc})") from exc
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            whole = json.loads(text)
            rows = whole if isinstance(whole, list) else [whole]
        except json.JSONDecodeError:
            try:
                rows = [json.loads(line) for line in text.splitlines() if line.strip()]
            except json.JSONDecodeError as exc:
                raise IngestError(f"{path}: not JSON lines nor a JSON list of prices ({exc.msg}, line {exc.lineno})") \
                    from None
    else:
        try:
            rows = pd.read_csv(path, dtype=str, keep_default_na=False).to_dict("records")
        except (ValueError, pd.errors.ParserError) as exc:
            raise IngestError(f"{path}: not a CSV of prices ({exc})") from None
    prices = []
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise IngestError(f"{path}: row {number} is not an object with model, from and a price")
        prices.append(checked_price(f"{path}: row {number}", row.get("model"), row.get("from"), row.get("input"),
                                    row.get("output"), row.get("per_call")))
    if not prices:
        raise IngestError(f"{path}: the price file names no model")
    return prices


def record_prices(con: store.Connection, prices: Sequence[Price], source: str) -> None:
    """Append the prices (in the caller's transaction); IngestError in one line for an unknown or retired model,
    before anything is written."""
    states = store.query(con, "model_states").set_index("model")["status"]
    for price in prices:
        if price.model not in states.index:
            close = difflib.get_close_matches(price.model, states.index.tolist(), n=3)
            hint = f"; did you mean {close}?" if close else f" ({len(states)} models known)"
            raise IngestError(f"unknown model {price.model!r}: ingest its results first{hint}")
        if states[price.model] == "retired":
            raise IngestError(f"model {price.model!r} is retired: it takes no price (`uniroute onboard --reactivate` "
                              "brings it back)")
    now = datetime.now(UTC).replace(tzinfo=None)
    latest = {(r.model, r.valid_from.date() if isinstance(r.valid_from, datetime) else r.valid_from):
              Price(r.model, r.valid_from, *(None if pd.isna(v) else float(v)
                                             for v in (r.input_per_mtok, r.output_per_mtok, r.per_call)))
              for r in store.query(con, "prices_latest").itertuples()}
    for price in prices:
        current = latest.get((price.model, price.valid_from))
        if current is not None and (current.input_per_mtok, current.output_per_mtok, current.per_call) == (
                price.input_per_mtok, price.output_per_mtok, price.per_call):
            continue  # the same price again: nothing to record (setting a price twice changes nothing)
        store.execute(con, "prices_insert", model=price.model, valid_from=price.valid_from,
                      input_per_mtok=price.input_per_mtok, output_per_mtok=price.output_per_mtok,
                      per_call=price.per_call, source=source, set_at=now)
