"""The operations layer: every operation a user runs, written once, for the CLI, the Prefect flows and the tests.

One function per operation (ingest, set_cost, build, onboard, inbox, retire, publish, rollback, doctor, route,
replay, and the store's part of an evaluation). Each takes a `Context` (the store's paths, MLflow's, and the
caller's on_wait and on_warning callbacks, built once from Settings by the edge), checks its inputs before it
opens the store (`inputs`), opens one store session that records its inputs and its one-line summary, switches
published state after the commit, reconciles what is derived from the store (MLflow, `published/current`, the
inbox) with one reconcile, and returns its result object. The edges only print or log what it returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from uniroute.lazy import lazy_attributes

if TYPE_CHECKING:
    from uniroute.operations.builds import build, cluster_on_dask, embed_new_prompts, embeds_ahead
    from uniroute.operations.context import Context, OperationError
    from uniroute.operations.evaluation import attribute_embeddings, prompt_embeddings
    from uniroute.operations.inputs import BuildInputs, build_inputs, router_kinds
    from uniroute.operations.intake import (
        InboxRun,
        annotated,
        embedded,
        inbox,
        ingest,
        set_cost,
        set_costs,
        set_prices,
    )
    from uniroute.operations.pool import (
        Onboarding,
        Retirement,
        Rollback,
        onboard,
        onboarding_set,
        retire,
        rollback,
        waiting_line,
    )
    from uniroute.operations.serving import Routed, RoutedQuickly, prompts_from_file, publish, route, route_quickly
    from uniroute.operations.traffic import Replayed, drift, drift_announced, drift_thresholds, replay
    from uniroute.operations.upkeep import doctor, reconciled

# Each name is imported from its module on first use: `uniroute route` loads the routing operation, not the
# build's tuning engine or the evaluation harness (the command's start-up is what a user waits for). One module per
# wing of the pipeline (builds, pool, serving, traffic), data coming in (intake) and upkeep (reconcile, doctor);
# no module is named like an operation, which it would shadow on this facade once imported.
_MODULE_OF = {
    "build": "builds", "cluster_on_dask": "builds", "embed_new_prompts": "builds", "embeds_ahead": "builds",
    "Context": "context", "OperationError": "context",
    "attribute_embeddings": "evaluation", "prompt_embeddings": "evaluation",
    "BuildInputs": "inputs", "build_inputs": "inputs", "router_kinds": "inputs",
    "InboxRun": "intake", "annotated": "intake", "embedded": "intake", "inbox": "intake", "ingest": "intake",
    "set_cost": "intake", "set_costs": "intake", "set_prices": "intake",
    "Onboarding": "pool", "Retirement": "pool", "Rollback": "pool", "onboard": "pool", "onboarding_set": "pool",
    "retire": "pool", "rollback": "pool", "waiting_line": "pool",
    "Routed": "serving", "prompts_from_file": "serving", "publish": "serving", "route": "serving",
    "RoutedQuickly": "serving", "route_quickly": "serving",
    "Replayed": "traffic", "drift": "traffic", "drift_announced": "traffic", "drift_thresholds": "traffic",
    "replay": "traffic",
    "doctor": "upkeep", "reconciled": "upkeep",
}


__getattr__ = lazy_attributes(globals(), _MODULE_OF)


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
    "RoutedQuickly",
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
    "route_quickly",
    "router_kinds",
    "set_cost",
    "set_costs",
    "set_prices",
    "waiting_line",
]
