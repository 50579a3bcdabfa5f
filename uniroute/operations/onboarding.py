"""Onboarding as an operation, from a results file (`uniroute onboard`), the inbox or the results-landed event.

Before the first build there is no champion to onboard onto: the results are stored, and the operation says in
one line that the models join at the next build. The same words on every surface; nothing fails.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uniroute.ingest import InboxOutcome, ingest_file, process_inbox
from uniroute.operations.context import Context, OperationError
from uniroute.operations.reconcile import reconciled
from uniroute.pipeline import registry
from uniroute.pipeline.onboard import OnboardError, OnboardResult, onboard_models
from uniroute.pipeline.onboarding_set import OnboardingSet, choose_onboarding_set
from uniroute.selection.onboarding_set import DEFAULT_STRATEGY


def waiting_line(models: Sequence[str]) -> str:
    """What onboarding says before the first build."""
    return f"{', '.join(models)} will join the pool at the next build (no router yet)"


@dataclass(frozen=True)
class Onboarding:
    """The models an onboarding was about, its result (None: no champion yet), rows that did not land."""

    models: tuple[str, ...]
    result: OnboardResult | None
    problems: tuple[str, ...] = ()  # per results file: rows quarantined, and the first reason

    def line(self) -> str:
        return self.result.line() if self.result is not None else waiting_line(self.models)

    def as_dict(self) -> dict[str, Any]:
        if self.result is not None:
            return self.result.as_dict()
        return {"skipped": True, "models": list(self.models), "reason": self.line()}


def onboard(ctx: Context, models: Sequence[str] = (), results: Sequence[Path] = (),
            progress: bool = False, reactivate: bool = False) -> Onboarding:
    """Make `models`, and the models of the `results` files (ingested as validation results in the same
    transaction), routable by the champion without refitting; OnboardError naming what cannot be. A retired
    model comes back only with `reactivate`."""
    names = list(dict.fromkeys(str(m) for m in models))
    problems: list[str] = []
    with ctx.session("onboard", inputs=",".join(map(str, results)) if results else ",".join(names)) as s:
        if results:
            found: list[str] = []
            for path in results:
                summary = ingest_file(s.con, path, split="val", progress=progress)
                found += [m for m in summary.models if m not in found]
                if summary.first_problem:
                    problems.append(f"{path.name}: {summary.rows_quarantined:,} rows quarantined, "
                                    f"{summary.first_problem}")
            if not found:
                why = f" ({'; '.join(problems)})" if problems else ""
                raise OnboardError(f"no valid results in {', '.join(map(str, results))}: nothing to onboard{why}")
            names += [m for m in found if m not in names]
        result = onboard_models(s.con, names, cache_dir=ctx.cache_dir, reactivate=reactivate,
                                min_answers=ctx.min_val_answers, gate=ctx.gate) \
            if registry.champion_id(s.con) else None
        done = Onboarding(tuple(names), result, tuple(problems))
        s.detail = done.line()
    reconciled(ctx)
    return done


@dataclass(frozen=True)
class InboxRun:
    """What one pass over the inbox did: each file's outcome, and the onboarding of the models that landed."""

    outcomes: tuple[InboxOutcome, ...]
    onboarding: Onboarding | None  # None: nothing landed, or onboarding was not asked for

    @property
    def landed(self) -> list[str]:
        return list(dict.fromkeys(m for o in self.outcomes for m in o.landed_models))

    @property
    def failed(self) -> list[str]:
        return [o.name for o in self.outcomes if o.status == "failed"]


def inbox(ctx: Context, onboard_landed: bool = True) -> InboxRun:
    """Ingest every complete inbox file and every finished file of the decision spool (one session each; files
    move to done/ or failed/ of their folder), then onboard the models whose validation results landed."""
    if ctx.inbox_dir is None:
        raise OperationError(f"no inbox folder for the store at {ctx.db_path}")
    outcomes: tuple = ()
    if ctx.spool_dir is not None and ctx.spool_dir.is_dir():
        # The serving spool first, so outcomes in the inbox find their decisions; its files are renamed from
        # .part only when finished, so none needs to settle.
        outcomes = tuple(process_inbox(ctx.db_path, ctx.spool_dir, settle_seconds=0.0, on_wait=ctx.on_wait))
    outcomes += tuple(process_inbox(ctx.db_path, ctx.inbox_dir, settle_seconds=ctx.settle_seconds,
                                    on_wait=ctx.on_wait))
    run = InboxRun(outcomes, None)
    if onboard_landed and run.landed:
        run = InboxRun(outcomes, onboard(ctx, run.landed))
    return run


def onboarding_set(ctx: Context, size: int, out: Path, strategy: str = DEFAULT_STRATEGY, model: str | None = None,
                   seed: int = 0) -> OnboardingSet:
    """Choose the validation prompts a new model should answer and write them to `out` (JSON lines, or CSV for a
    .csv name; written whole or not at all): one line per prompt with `prompt_id` and `prompt`, best first."""
    suffix = out.suffix.lower()
    if suffix not in (".jsonl", ".json", ".csv"):
        raise OperationError(f"{out}: write the onboarding set as .jsonl or .csv")
    with ctx.session("onboarding-set", inputs=f"{size} {strategy} {model or ''}".strip()) as s:
        chosen = choose_onboarding_set(s.con, size, strategy, model=model, cache_dir=ctx.cache_dir, seed=seed)
        s.detail = chosen.line()
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(out.name + ".part")
    frame = chosen.prompts
    if suffix == ".csv":
        frame.to_csv(part, index=False)
    else:
        frame.to_json(part, orient="records", lines=True, force_ascii=False)
    os.replace(part, out)  # a reader sees the old file or the whole new one
    return chosen
