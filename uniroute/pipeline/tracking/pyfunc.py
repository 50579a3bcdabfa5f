"""The pyfunc's behaviour at serve time: prompts in, the chosen model per prompt out.

`predict` takes a DataFrame with a `prompt` column and the params `lambda` (float), `budget` (float, -1 =
unused), `pool` (comma-separated names) and `explain` (bool), and returns a DataFrame with columns
prompt_index, model, decision_id, cluster, lam, budget, setting, router_id, fallbacks, expected_score,
expected_cost, price_snapshot (and `explain`, the argmin's terms per candidate, when asked); `mlflow models serve
--env-manager local` answers the same requests. Each decision is recorded to the serving process's spool
($UNIROUTE_HOME/spool/decisions) unless UNIROUTE_RECORD_DECISIONS=false."""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from uniroute.embed import embedder_from_state, make_embedder, text_hash
from uniroute.errors import UnirouteError
from uniroute.pipeline.serving.calibration import VALIDATION, Calibration, TrafficWindow, calibration_at
from uniroute.pipeline.serving.records import (
    Recording,
    Served,
    decision_records,
    explored,
    new_decision_ids,
    recording_of,
)
from uniroute.pipeline.serving.route import (
    RoutingRequest,
    RoutingSource,
    calibrated_lambda,
    checked_request,
    cluster_values,
    pool_names,
)
from uniroute.pipeline.serving.spool import DecisionSpool, finish_on_stop
from uniroute.routers.serialize import router_from_bytes
from uniroute.settings import Settings, apply_offline_environment, settings_from_environment

log = logging.getLogger(__name__)

UNUSED_BUDGET = -1.0  # the signature's default for `budget`: no budget asked for
UNUSED_MAX_COST = -1.0  # the signature's default for `max_cost`: no cap asked for (a request's -1 never gets here)
UNUSED_MAX_LATENCY = -1.0  # the signature's default for `max_latency`: no latency cap asked for
# The signature's default for `lambda`: a value no request sends (-1 is a request, refused as negative); models
# logged before it have 0.0 there, quality only.
UNUSED_LAMBDA = -1e300

def _rows(model_input: Any) -> list[Any]:
    """The prompt rows of a pyfunc input as given: a DataFrame's `prompt` column, a {"prompt": [...]} dict, a list."""
    if isinstance(model_input, pd.DataFrame):
        if "prompt" not in model_input.columns:
            raise ValueError(f"model input needs a 'prompt' column, got columns {list(model_input.columns)}")
        return model_input["prompt"].tolist()
    if isinstance(model_input, Mapping):
        if "prompt" not in model_input:
            raise ValueError(f"model input needs a 'prompt' key, got keys {list(model_input)}")
        return list(model_input["prompt"])
    if isinstance(model_input, Sequence) and not isinstance(model_input, (str, bytes)):
        return list(model_input)
    raise TypeError(f"model input must be a DataFrame, a dict or a list of prompts, not {type(model_input)}")


def prompts_of(model_input: Any) -> list[str]:
    """The prompts in a pyfunc input: a DataFrame with a `prompt` column, a {"prompt": [...]} dict or a list."""
    prompts = _rows(model_input)
    bad = [i for i, p in enumerate(prompts) if not isinstance(p, str)]
    if bad:
        raise TypeError(f"prompts must be strings; rows {bad[:10]} are not")
    return prompts


def pool_of(pool: str | None) -> list[str] | None:
    """The pool param ("m1,m2", CSV quoting as `uniroute route --pool`; blank = every model) as names or None."""
    if pool is None or not pool.strip():
        return None
    return [name for name in pool_names(pool) if name.strip()]


def request_of(params: Mapping[str, Any]) -> RoutingRequest:
    """The routing request of the pyfunc's params, checked as `uniroute route` checks it (RoutingError).

    The signature's defaults stand for "not given": lambda UNUSED_LAMBDA (0.0 in models logged before, so a
    budget alone is not "both") and budget -1. Neither given: the default budget, as `uniroute route` does
    (serving.resolved_setting).
    """
    budget = params.get("budget")
    budget = None if budget is None or budget == UNUSED_BUDGET else budget
    lam = params.get("lambda")
    lam = None if lam is None or lam == UNUSED_LAMBDA or (budget is not None and lam == 0.0) else lam
    max_cost = params.get("max_cost")
    max_cost = None if max_cost is None or max_cost == UNUSED_MAX_COST else max_cost
    if max_cost is not None and lam == 0.0:  # the lambda of models logged before UNUSED_LAMBDA: not given
        lam = None
    max_latency = params.get("max_latency")
    max_latency = None if max_latency is None or max_latency == UNUSED_MAX_LATENCY else max_latency
    pool = params.get("pool")
    return RoutingRequest(lam, budget, None if pool is None or not str(pool).strip() else tuple(pool_names(pool)),
                          max_cost, max_latency)


def _load_context(model: Any, context: Any) -> None:
    """Read the router (npz, no pickle), build its embedder (refusing a mismatch), load the validation sample."""

    meta = json.loads(Path(context.artifacts["meta"]).read_text())
    router = router_from_bytes(Path(context.artifacts["router"]).read_bytes())
    state = context.artifacts.get("embedder")
    if state is not None:  # the embedder travels with the model (TF-IDF, static, ONNX; embed.portable)
        embedder = embedder_from_state(Path(state).read_bytes(), Path(state).parent)
    else:
        embedder = make_embedder(meta["embedder"], progress=False)
    router.check_embedder(embedder.embedder_id)
    val_path = context.artifacts.get("val_embeddings")
    model.router = router
    model.embedder = embedder
    model.router_id = meta["router_id"]
    model.price_snapshot = meta.get("price_snapshot")  # None in models logged before prices
    model.X_val = None
    model.spool, model.recording = (None, Recording(enabled=False)) if _not_recording else \
        served_spool(settings_from_environment())
    if val_path is not None:
        with np.load(val_path, allow_pickle=False) as saved:
            model.X_val = np.repeat(saved["rows"], saved["counts"], axis=0)  # (n, d) as logged
    model.calibration = Calibration(model.X_val, VALIDATION)
    if not _not_recording:  # a served model in a home with traffic calibrates budgets and caps on it
        settings = settings_from_environment()
        traffic = calibration_at(settings.db_path, router.embedder_id,
                                 TrafficWindow(settings.budget_traffic_days, settings.budget_traffic_min_decisions,
                                               settings.budget_traffic_max_decisions))
        model.calibration = traffic if traffic.on_traffic else Calibration(model.X_val, traffic.source,
                                                                            traffic.latency)


_not_recording = False  # set while MLflow checks a model being logged: its routing of the example is no traffic


@contextlib.contextmanager
def not_recorded() -> Iterator[None]:
    """Models loaded in this block record nothing (MLflow loads a model being logged and routes its input example
    once; that decision must not land in the build's home as if a user had asked it)."""
    global _not_recording
    before, _not_recording = _not_recording, True
    try:
        yield
    finally:
        _not_recording = before


def served_spool(settings: Settings) -> tuple[DecisionSpool | None, Recording]:
    """The spool a served model records its decisions to ($UNIROUTE_HOME of the serving process; none when
    UNIROUTE_RECORD_DECISIONS=false), finished on size or age by a timer so a killed server loses one file at most,
    and how it records."""
    recording = recording_of(settings)
    if not recording.enabled:
        return None, recording
    spool = DecisionSpool(settings.spool_dir, settings.spool_max_bytes, settings.spool_max_seconds, timer=True)
    atexit.register(spool.close)  # a server stopped cleanly finishes its file
    finish_on_stop(spool)  # and one stopped by SIGTERM (uvicorn re-raises it after its shutdown: no atexit) or SIGINT
    return spool, recording


def _predict(model: Any, context: Any, model_input: Any, params: dict[str, Any] | None = None) -> pd.DataFrame:
    """Route each prompt: the request checked as `uniroute route` checks it, then embed and route_names."""
    request = request_of(params or {})
    # Checked as `uniroute route` checks it (serving.checked_request): the same rules and one-line messages.
    source = RoutingSource(model.router, model.router_id, tuple(model.router.models), frozenset(), None, "pyfunc")
    # A budget or cap on the traffic's mix when the home has enough of it, else the served model's validation
    # sample (None: the router's own stand-in); a latency cap on the latencies the home's traffic recorded.
    calibration = getattr(model, "calibration", None) or Calibration(model.X_val, VALIDATION)
    prompts, pool = checked_request(source, _rows(model_input), request.lam, request.budget, request.pool,
                                    request.max_cost, request.max_latency, calibration.latency)
    chosen = None if request.pool is None and request.max_latency is None else list(pool)
    lam, budget, setting = calibrated_lambda(model.router, pool, request.lam, request.budget, request.max_cost,
                                             calibration)
    X = np.asarray(model.embedder.encode(prompts), dtype=np.float32)
    # As `uniroute route`: the decision is rank 1 of the argmin's terms (routers.explain), with its fall-backs;
    # exploration (off by default) may serve a near-best model instead, its row then describing that model.
    terms = model.router.route_terms(X, lam, chosen)
    spool, recording = getattr(model, "spool", None), getattr(model, "recording", Recording(enabled=False))
    served, propensity, explore = explored(model.router, X, lam, chosen, terms.chosen(),
                                           recording if spool is not None else Recording(enabled=False))
    decided = terms.summary_columns(served)
    # The fields `uniroute route` returns, so a gateway reads the same answer from either surface (a kind
    # without clusters has none: null, which JSON carries where pandas' NA would not serialise). One constructor
    # call with a value per row (pandas broadcasts a scalar column by column): adding the columns one by one
    # (assign) was a third of a one-prompt request.
    n = len(prompts)
    frame = pd.DataFrame({
        "prompt_index": np.arange(n, dtype=np.int64), "model": decided["model"],
        "decision_id": new_decision_ids(n), "cluster": cluster_values(model.router, X),
        "lam": [lam] * n, "budget": [budget] * n, "setting": [setting] * n, "max_cost": [request.max_cost] * n,
        "max_latency": [request.max_latency] * n,
        "router_id": [model.router_id] * n, "fallbacks": decided["fallbacks"],
        "expected_score": decided["expected_score"], "expected_cost": decided["expected_cost"],
        "price_snapshot": [getattr(model, "price_snapshot", None)] * n}, index=pd.RangeIndex(n))
    if spool is not None:
        served_by = Served("pyfunc", model.router_id, model.embedder.embedder_id)
        records = decision_records(frame, X, model.router, served_by, texts=prompts if recording.keep_prompt else None,
                                   propensity=propensity, explore=explore,
                                   text_hashes=[text_hash(p) for p in prompts])
        spool.write(records)
    if explain_asked(params or {}):
        frame["explain"] = terms.explained(calibration.latency)
    return frame


def explain_asked(params: Mapping[str, Any]) -> bool:
    """The `explain` param: true, or a string an HTTP client sends for it ("true", "1"); false when absent."""
    value = params.get("explain", False)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


@functools.cache
def router_model_class() -> type:
    """The PythonModel subclass, built on first use so that mlflow is imported only after the offline switches."""
    apply_offline_environment()
    import mlflow.pyfunc
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

    # mypy does not resolve a base class through this function-local import of mlflow.
    class RouterModel(mlflow.pyfunc.PythonModel):  # type: ignore[name-defined]
        """The router as an MLflow pyfunc: prompts in, the chosen model per prompt out."""

        def load_context(self, context: Any) -> None:
            _load_context(self, context)

        # A DataFrame hint (not Any, not list[str]): MLflow would otherwise derive its own input validation
        # from the hint; the declared signature (a `prompt` column) is what validates requests.
        def predict(
            self, context: Any, model_input: pd.DataFrame, params: dict[str, Any] | None = None
        ) -> pd.DataFrame:
            try:
                return _predict(self, context, model_input, params)
            except (UnirouteError, TypeError, ValueError) as exc:
                # A bad request: MLflow's server answers its message with a 400, not a stack trace.
                raise MlflowException(str(exc), error_code=INVALID_PARAMETER_VALUE) from None

    return RouterModel
