"""The operations layer: every operation a user runs, written once, for the CLI, the Prefect flows and the tests.

One function per operation (ingest, set_cost, build, onboard, inbox, retire, publish, rollback, doctor, route,
replay, and the store's part of an evaluation). Each takes a `Context` (the store's paths, MLflow's, and the
caller's on_wait and on_warning callbacks, built once from Settings by the edge), checks its inputs before it
opens the store (`inputs`), opens one store session that records its inputs and its one-line summary, switches
published state after the commit, reconciles what is derived from the store (MLflow, `published/current`, the
inbox) with one reconcile, and returns its result object. The edges only print or log what it returns.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from uniroute.operations.builds import build, cluster_on_dask, embed_new_prompts, embeds_ahead
    from uniroute.operations.context import Context, OperationError
    from uniroute.operations.data import annotated, embedded, ingest, set_cost, set_costs, set_prices
    from uniroute.operations.drift import drift, drift_announced, drift_thresholds
    from uniroute.operations.evaluation import attribute_embeddings, prompt_embeddings
    from uniroute.operations.inputs import BuildInputs, build_inputs, router_kinds
    from uniroute.operations.onboarding import InboxRun, Onboarding, inbox, onboard, onboarding_set, waiting_line
    from uniroute.operations.pool import Retirement, Rollback, publish, retire, rollback
    from uniroute.operations.reconcile import doctor, reconciled
    from uniroute.operations.replaying import Replayed, replay
    from uniroute.operations.routing import Routed, prompts_from_file, route

# Each name is imported from its module on first use: `uniroute route` loads the routing operation, not the
# build's tuning engine or the evaluation harness (the command's start-up is what a user waits for).
_MODULE_OF = {
    "build": "builds", "cluster_on_dask": "builds", "embed_new_prompts": "builds", "embeds_ahead": "builds",
    "Context": "context", "OperationError": "context",
    "annotated": "data", "embedded": "data", "ingest": "data", "set_cost": "data", "set_costs": "data",
    "set_prices": "data",
    "drift": "drift", "drift_announced": "drift", "drift_thresholds": "drift",
    "attribute_embeddings": "evaluation", "prompt_embeddings": "evaluation",
    "BuildInputs": "inputs", "build_inputs": "inputs", "router_kinds": "inputs",
    "InboxRun": "onboarding", "Onboarding": "onboarding", "inbox": "onboarding", "onboard": "onboarding",
    "onboarding_set": "onboarding",
    "waiting_line": "onboarding",
    "Retirement": "pool", "Rollback": "pool", "publish": "pool", "retire": "pool", "rollback": "pool",
    "doctor": "reconcile", "reconciled": "reconcile",
    "Replayed": "replaying", "replay": "replaying",
    "Routed": "routing", "prompts_from_file": "routing", "route": "routing",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'uniroute.operations' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"uniroute.operations.{_MODULE_OF[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "BuildInputs",
    "Context",
    "InboxRun",
    "OperationError",
    "Onboarding",
    "Replayed",
    "Retirement",
    "Rollback",
    "Routed",
    "annotated",
    "attribute_embeddings",
    "build",
    "build_inputs",
    "cluster_on_dask",
    "doctor",
    "drift",
    "drift_announced",
    "drift_thresholds",
    "embed_new_prompts",
    "embedded",
    "embeds_ahead",
    "inbox",
    "ingest",
    "onboard",
    "onboarding_set",
    "prompt_embeddings",
    "prompts_from_file",
    "publish",
    "reconciled",
    "replay",
    "retire",
    "rollback",
    "route",
    "router_kinds",
    "set_cost",
    "set_costs",
    "set_prices",
    "waiting_line",
]
