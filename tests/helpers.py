"""Operations as a user's command runs them: one store session each (one connection, one transaction)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from uniroute import store
from uniroute.embed import embed_cached
from uniroute.ingest import IngestSummary, ingest_file
from uniroute.pipeline.build import BuildResult, run_build
from uniroute.pipeline.onboard import OnboardResult, onboard_models
from uniroute.pipeline.publish import PublishResult, publish_champion, switch_current_after_commit
from uniroute.pipeline.retire import RetireResult, retire_model


def ingest(db_path: Path, path: Path, **options: Any) -> IngestSummary:
    with store.session(db_path, "ingest", inputs=str(path)) as s:
        return ingest_file(s.con, path, **options)


def embedded(db_path: Path, texts: list[str], embedder: Any, **options: Any):
    with store.session(db_path, "embed", atomic=False) as s:
        return embed_cached(s.con, texts, embedder, **options)


def build(db_path: Path, embedder: str, seed: int = 0, kinds: Sequence[str] | None = None,
          **options: Any) -> BuildResult:
    with store.session(db_path, "build") as s:
        return run_build(s.con, embedder, seed, kinds=kinds, **options)


def onboard(db_path: Path, models: list[str]) -> OnboardResult:
    with store.session(db_path, "onboard") as s:
        return onboard_models(s.con, models)


def publish(db_path: Path, published_dir: Path, force: bool = False) -> PublishResult:
    with store.session(db_path, "publish") as s:
        result = publish_champion(s.con, published_dir, force=force)
        switch_current_after_commit(s, published_dir, result)
    return result


def retire(db_path: Path, model: str) -> RetireResult:
    with store.session(db_path, "retire") as s:
        return retire_model(s.con, model)
