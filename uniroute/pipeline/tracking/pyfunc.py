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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from uniroute.embed import embedder_from_state, make_embedder
from uniroute.errors import UnirouteError
from uniroute.pipeline.serving.calibration import VALIDATION, Calibration, TrafficWindow, calibration_at
from uniroute.pipeline.serving.records import Recording, Served, decision_records, recording_of
from uniroute.pipeline.serving.route import (
    ResolvedSetting,
    RoutingRequest,
    RoutingSource,
    decided_columns,
    pool_names,
)
from uniroute.pipeline.serving.spool import DecisionSpool, finish_on_stop
from uniroute.pipeline.tracking.served_json import use_one_shot_json
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
        if model_input.shape[1] == 1:  # what a server is sent: the frame as one array, a quarter of the column's cost
            return model_input.to_numpy()[:, 0].tolist()
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


@dataclass(frozen=True, eq=False)
class _Version:
    """What a served router version works out once and every request reuses: the source it answers from, the
    calibration, where its records say they came from, and each setting resolved to its lambda (the default
    budget's published lambda; a budget or max cost calibrated on the prompt mix), filled by the first request
    that names it."""

    router: Any
    embedder: Any
    source: RoutingSource
    calibration: Calibration
    served: Served
    resolved: dict[RoutingRequest, ResolvedSetting] = field(default_factory=dict)


RESOLVED_KEPT = 256  # settings remembered per version: a client sweeping lambdas must not grow the server


def _version(model: Any) -> _Version:
    """The model's _Version, made on its first request and again whenever its router or embedder is replaced."""
    version = model.__dict__.get("_version")
    if version is not None and version.router is model.router and version.embedder is model.embedder:
        return version
    # A budget or cap on the traffic's mix when the home has enough of it, else the served model's validation
    # sample (None: the router's own stand-in); a latency cap on the latencies the home's traffic recorded.
    calibration = getattr(model, "calibration", None) or Calibration(getattr(model, "X_val", None), VALIDATION)
    source = RoutingSource(model.router, model.router_id, tuple(model.router.models), frozenset(), None, "pyfunc",
                           price_snapshot=getattr(model, "price_snapshot", None))
    version = _Version(model.router, model.embedder, source, calibration,
                       Served("pyfunc", model.router_id, model.embedder.embedder_id))
    model._version = version
    return version


def _predict(model: Any, context: Any, model_input: Any, params: dict[str, Any] | None = None,
             as_records: bool = False) -> pd.DataFrame | list[dict[str, Any]]:
    """Route each prompt as `uniroute route` does (route.decided_columns: the same checks, one-line messages,
    decisions and records), each setting resolved once per router version. The answer is a frame, or with
    as_records its rows as the JSON-ready dicts MLflow's server would make of that frame."""
    params = params or {}
    request = request_of(params)
    version = _version(model)
    spool, recording = getattr(model, "spool", None), getattr(model, "recording", Recording(enabled=False))
    recording = recording if spool is not None else Recording(enabled=False)
    resolved = version.resolved.get(request)
    prompts = _rows(model_input)
    decided = decided_columns(version.source, prompts, request.lam, request.budget, request.pool,
                              model.embedder, recording=recording, explain=explain_asked(params),
                              max_cost=request.max_cost, calibration=version.calibration,
                              max_latency=request.max_latency, resolved=resolved)
    columns = decided.plain_columns()
    if resolved is None:
        if len(version.resolved) >= RESOLVED_KEPT:
            version.resolved.clear()
        version.resolved[request] = (columns["lam"][0], columns["budget"][0], columns["setting"][0],
                                     columns["max_cost"][0])
    if spool is not None:
        spool.write(decision_records(columns, decided.X, version.router, version.served,
                                     texts=prompts if recording.keep_prompt else None,
                                     propensity=decided.propensity, explore=decided.explored))
    return answer_records(columns) if as_records else answer_frame(columns)


# The answer's columns in the order a client reads them (the model's output signature, tracking/model.py).
ANSWER_COLUMNS = ("prompt_index", "model", "decision_id", "cluster", "lam", "budget", "setting", "max_cost",
                  "max_latency", "router_id", "fallbacks", "expected_score", "expected_cost", "price_snapshot")


def answer_frame(columns: Mapping[str, Any]) -> pd.DataFrame:
    """The served answer of decided columns (route.DecidedColumns.plain_columns): ANSWER_COLUMNS, and `explain`
    when asked. A cluster is a plain int or None in an object column (JSON carries it; pandas' NA would not
    serialise), prompt_index int64."""
    n = len(columns["decision_id"])
    clusters = np.empty(n, dtype=object)
    clusters[:] = columns["cluster"]
    answer = {name: columns[name] for name in ANSWER_COLUMNS} | {"prompt_index": np.arange(n, dtype=np.int64),
                                                                 "cluster": clusters}
    if "explain" in columns:
        answer["explain"] = columns["explain"]
    return pd.DataFrame(answer, index=pd.RangeIndex(n))


def answer_records(columns: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of answer_frame(columns) as MLflow's server sends them (`to_dict(orient="records")`: a dict per
    row, Python ints, floats, strings, lists and None), without the frame: in the server building the frame and
    reading it back row by row cost a one-prompt request more than its decision."""
    n = len(columns["decision_id"])
    names = (*ANSWER_COLUMNS, *(("explain",) if "explain" in columns else ()))
    values = [range(n) if name == "prompt_index" else _plain(columns[name]) for name in names]
    return [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]


def _plain(values: Any) -> list[Any]:
    """A column as a list of Python values (a numpy array's tolist; a list as it is)."""
    return values.tolist() if isinstance(values, np.ndarray) else list(values)


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
    from mlflow.environment_variables import _MLFLOW_IS_IN_SERVING_ENVIRONMENT
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
        ) -> pd.DataFrame | list[dict[str, Any]]:
            try:
                # MLflow's scoring server (and `mlflow models predict`) marks its process and turns the answer
                # into JSON at once (DataFrame.to_dict(orient="records")): there the rows go out as those very
                # dicts, the same JSON, written by the C encoder (served_json); a Python caller gets the frame.
                serving = bool(_MLFLOW_IS_IN_SERVING_ENVIRONMENT.get())
                if serving:
                    use_one_shot_json()
                return _predict(self, context, model_input, params, as_records=serving)
            except (UnirouteError, TypeError, ValueError) as exc:
                # A bad request: MLflow's server answers its message with a 400, not a stack trace.
                raise MlflowException(str(exc), error_code=INVALID_PARAMETER_VALUE) from None

    return RouterModel
