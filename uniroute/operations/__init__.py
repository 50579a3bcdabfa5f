"""The operations layer: every operation a user runs, written once, for the CLI, the Prefect flows and the tests.

One function per operation (ingest, set_cost, build, onboard, inbox, retire, publish, doctor, route, and the
store's part of an evaluation). Each takes a `Context` (the store's paths, MLflow's, and the caller's on_wait
and on_warning callbacks, built once from Settings by the edge), checks its inputs before it opens the store
(`inputs`), opens one store session that records its inputs and its one-line summary, switches published state
after the commit, reconciles what is derived from the store (MLflow, `published/current`, the inbox) with one
reconcile, and returns its result object. The edges only print or log what it returns.
"""

from uniroute.operations.builds import build, embed_new_prompts, embeds_ahead
from uniroute.operations.context import Context, OperationError
from uniroute.operations.data import annotated, embedded, ingest, set_cost
from uniroute.operations.evaluation import attribute_embeddings, prompt_embeddings
from uniroute.operations.inputs import BuildInputs, build_inputs, router_kinds
from uniroute.operations.onboarding import InboxRun, Onboarding, inbox, onboard, waiting_line
from uniroute.operations.pool import Retirement, publish, retire
from uniroute.operations.reconcile import doctor, reconciled
from uniroute.operations.routing import Routed, prompts_from_file, route

__all__ = [
    "BuildInputs",
    "Context",
    "InboxRun",
    "OperationError",
    "Onboarding",
    "Retirement",
    "Routed",
    "annotated",
    "attribute_embeddings",
    "build",
    "build_inputs",
    "doctor",
    "embed_new_prompts",
    "embedded",
    "embeds_ahead",
    "inbox",
    "ingest",
    "onboard",
    "prompt_embeddings",
    "prompts_from_file",
    "publish",
    "reconciled",
    "retire",
    "route",
    "router_kinds",
    "set_cost",
    "waiting_line",
]
