"""Operations on the served pool: publish the champion's routing tables, retire a model, roll the champion back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from uniroute.operations.context import Context
from uniroute.operations.reconcile import reconciled
from uniroute.pipeline.publish import PublishResult, latest_publication, publish_champion, switch_current_after_commit
from uniroute.pipeline.retire import RetireResult, retire_model
from uniroute.pipeline.rollback import RollbackResult, rollback_champion


def publish(ctx: Context, force: bool = False) -> PublishResult:
    """Write the champion's routing tables for the active pool (a new version unless nothing changed or force);
    `published/current` switches after the commit."""
    with ctx.session("publish", inputs="force" if force else "") as s:
        result = publish_champion(s.con, ctx.published_dir, force=force, window=ctx.traffic_window)
        switch_current_after_commit(s, ctx.published_dir, result)
        s.detail = result.line()
    reconciled(ctx)
    return result


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
