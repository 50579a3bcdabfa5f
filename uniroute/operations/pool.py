"""Operations on the pool: onboard models (from a results file, the inbox or the results-landed event), the onboarding
set, retire a model, roll the champion back.

Before the first build there is no champion to onboard onto: the results are stored, and the operation says in
one line that the models join at the next build. The same words on every surface; nothing fails."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from uniroute.ingest import ingest_file
from uniroute.operations.context import Context, OperationError
from uniroute.operations.mlflow_after import MlflowFollowUp, start_mlflow_sync
from uniroute.operations.upkeep import reconciled
from uniroute.pipeline.pool import registry
from uniroute.pipeline.pool.onboard import OnboardError, OnboardResult, onboard_models
from uniroute.pipeline.pool.onboarding_set import OnboardingSet, choose_onboarding_set
from uniroute.pipeline.pool.retire import RetireResult, retire_model
from uniroute.pipeline.pool.rollback import RollbackResult, rollback_champion
from uniroute.pipeline.serving.publish import (
    PublishResult,
    latest_publication,
    publish_champion,
    switch_current_after_commit,
)
from uniroute.selection.onboarding_order import DEFAULT_STRATEGY


def waiting_line(models: Sequence[str]) -> str:
    """What onboarding says before the first build."""
    return f"{', '.join(models)} will join the pool at the next build (no router yet)"


@dataclass(frozen=True)
class Onboarding:
    """The models an onboarding was about, its result (None: no champion yet), rows that did not land."""

    models: tuple[str, ...]
    result: OnboardResult | None
    problems: tuple[str, ...] = ()  # per results file: rows quarantined, and the first reason
    mlflow_follow_up: MlflowFollowUp | None = None  # the process logging this run to MLflow after the answer

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
    later = ctx.mlflow_after_log is not None and ctx.tracking_uri is not None and result is not None
    reconciled(ctx, mlflow=not later)
    return replace(done, mlflow_follow_up=start_mlflow_sync(ctx)) if later else done


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


@dataclass(frozen=True)
class Retirement:
    """A retired model: the router version without it, and the publication without it (None: nothing was
    published before, so nothing is republished)."""

    result: RetireResult
    published: PublishResult | None

    def as_dict(self) -> dict[str, Any]:
        return {**self.result.as_dict(), "published": None if self.published is None else self.published.as_dict()}


def retire(ctx: Context, model: str) -> Retirement:
    """Take a model out of the pool at once: a new router version without it, republished if anything was."""
    published = None
    with ctx.session("retire", inputs=model) as s:
        result = retire_model(s.con, model)
        if result.router_id is not None and latest_publication(s.con) is not None:
            published = publish_champion(s.con, ctx.published_dir)
            switch_current_after_commit(s, ctx.published_dir, published)
        s.detail = result.line()
    reconciled(ctx)
    return Retirement(result, published)


@dataclass(frozen=True)
class Rollback:
    """A rollback: the champion's move, and the publication of the version rolled back to (None: nothing was
    published before, or nothing moved)."""

    result: RollbackResult
    published: PublishResult | None

    def as_dict(self) -> dict[str, Any]:
        return {**self.result.as_dict(), "published": None if self.published is None else self.published.as_dict()}


def rollback(ctx: Context, router_id: str | None = None, force: bool = False) -> Rollback:
    """Make an earlier champion (the previous one by default) the champion again: the store's champion and the
    published tables move in one commit, `published/current` after it, MLflow's alias in the reconcile."""
    published = None
    with ctx.session("rollback", inputs=" ".join(filter(None, [router_id, "force" if force else ""]))) as s:
        result = rollback_champion(s.con, router_id, force=force, cache_dir=ctx.cache_dir,
                                   min_answers=ctx.min_val_answers, gate=ctx.gate)
        if result.moved and latest_publication(s.con) is not None:
            published = publish_champion(s.con, ctx.published_dir)
            switch_current_after_commit(s, ctx.published_dir, published)
        s.detail = result.line()
    reconciled(ctx)
    return Rollback(result, published)
