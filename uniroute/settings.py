"""One Settings object, built at the edges (CLI, flows) and passed down as plain values."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from uniroute import environment
from uniroute.environment import OFFLINE_ENVIRONMENT
from uniroute.errors import UnirouteError

__all__ = ["OFFLINE_ENVIRONMENT", "Settings", "SettingsError", "apply_offline_environment", "comma_separated",
           "settings_from_environment"]

# The builds' embedder when neither UNIROUTE_BUILD_EMBEDDER nor UNIROUTE_EMBEDDER is set: minilm-onnx, by the rule of
# docs/decisions/0001-build-embedder-default.md (not significantly worse than the best measured embedder on any
# shared dataset; docs/results/embedders.md).
# Over 100 paired trials static's served router (auto) is below minilm-onnx's on every shared dataset: RouterBench
# 35-63 (p = .006), RouterDC 32-67 (p = .0006), MMLU-Pro 29-70 (p = 5e-5). Embeddings are cached per embedder, so a
# nightly build pays its ~12 prompts/s (one thread) once per new prompt; interactive work keeps static
# (Settings.embedder below).
DEFAULT_BUILD_EMBEDDER = "minilm-onnx"


def comma_separated(text: str) -> tuple[str, ...]:
    """The names of a comma-separated list ("a, b" -> ("a", "b"); blank -> ())."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


class Settings(BaseSettings):
    """Where state lives and how the pipeline runs; every field can be set as UNIROUTE_<FIELD>."""

    model_config = SettingsConfigDict(env_prefix="UNIROUTE_", extra="ignore")

    home: Path = Path(".uniroute")
    # Interactive work (make run's demo, `route` on a laptop, `report --similarity`): static, distilled once from the
    # local MiniLM, about 200x faster. minilm, minilm-onnx, tfidf also work.
    embedder: str = "static"
    # Nightly builds and `uniroute evaluate` (the property build_embedder_name): this when set, else
    # UNIROUTE_EMBEDDER when that is set (one switch for both, as before the split), else DEFAULT_BUILD_EMBEDDER.
    build_embedder: str | None = None
    embed_batch_size: int = 128
    seed: int = 0
    # The router kinds the nightly build fits and chooses among (UNIROUTE_BUILD_KINDS=a,b; blank: every kind, see
    # selection.candidates.KINDS). One kind serves that kind without a choice. The names are checked against the
    # kinds by the operations layer (this module cannot import the routers).
    build_kinds: Annotated[tuple[str, ...], NoDecode] = ()
    dask_address: str | None = None
    dask_workers: int = 2
    # Where the embedding vectors (and cluster assignments) live as Parquet partitions: any fsspec URL every Dask
    # worker reaches (a shared folder, s3://...); blank: $UNIROUTE_HOME/embeddings. The store reads it from the
    # environment itself (uniroute/store/embeddings.py: every connection, in any process), so set it there.
    embeddings_url: str | None = None
    mlflow: bool = True  # log lineage to MLflow (UNIROUTE_MLFLOW=false: the store alone, e.g. for tests)
    # Whether `uniroute onboard` logs its MLflow run in a detached process once it has answered (importing MLflow
    # and logging a model cost ten of the command's twelve seconds); false: before it answers, as every other
    # operation does. The store decides either way: MLflow follows (docs/decisions/0004).
    mlflow_background: bool = True
    # Evidence before traffic: validation answers a model needs before the router sends it any prompt.
    min_val_answers: int = 5
    # The evidence gate (pipeline/pool/evidence_gate.py): a model that would win a cluster with fewer answers there
    # than this, or a 95% interval of its error there wider than this, is provisional in it.
    gate_min_cluster_answers: int = 10
    gate_max_interval_width: float = 0.5
    store_wait_seconds: float = 120.0  # how long a writer waits for another operation to release the store
    inbox_settle_seconds: float = 2.0  # a file copied into the inbox or the spool in place must stand still this long
    sql_timeout_seconds: float = 30.0
    # Decision records (pipeline/serving/records.py): every routed prompt is recorded to the spool unless switched off
    # (UNIROUTE_RECORD_DECISIONS=false, or `route --no-log`); the prompt text only when opted in; exploration off.
    record_decisions: bool = True
    record_prompts: bool = False
    explore_share: float = 0.0
    explore_margin: float = 0.02
    spool_max_bytes: int = 16 * 1024 * 1024  # a server's spool file is finished at this size ...
    spool_max_seconds: float = 60.0  # ... or this age, so a killed server loses at most this much
    # The nightly build's shadow gate (pipeline/traffic/shadow_gate.py): the challenger and the champion replay the
    # traffic
    # of the last shadow_window_days at the same expected spend; with fewer decisions than shadow_min_decisions it
    # is skipped (said in the build's reason), and the challenger is refused when worse at p < shadow_alpha.
    shadow_gate: bool = True
    shadow_window_days: float = 7.0
    shadow_min_decisions: int = 200
    shadow_alpha: float = 0.01
    # Budgets and --max-cost are turned into lambda on the recent traffic's prompts (the decision records'
    # embeddings of the last budget_traffic_days) when at least budget_traffic_min_decisions were routed there, on
    # the validation prompts otherwise; the newest budget_traffic_max_decisions bound what one route call reads.
    budget_traffic_days: float = 7.0
    budget_traffic_min_decisions: int = 500
    budget_traffic_max_decisions: int = 20_000
    # Drift (operations.drift, in the publish flow): the traffic of the last drift_days, once it holds
    # drift_min_decisions, drifted when its cluster mix is farther than drift_mix_threshold (total variation,
    # 0..1) from the training prompts' or its share of prompts far from every centroid (beyond the distance 95% of
    # training prompts are within) exceeds drift_far_threshold; then `uniroute.traffic.drifted` starts a build.
    drift_days: float = 1.0
    drift_min_decisions: int = 200
    drift_mix_threshold: float = 0.25
    drift_far_threshold: float = 0.25
    sql_memory_limit: str = "1GB"
    sql_temp_limit: str = "2GB"  # how much a `uniroute sql` query may spill to $UNIROUTE_HOME/tmp
    # `make serve`: the ports Prefect and MLflow users expect (and LiteLLM's proxy's, for the gateway); change them
    # when another server holds them.
    prefect_port: int = 4200
    mlflow_port: int = 5000
    gateway_port: int = 4000
    shared_datasets: Path = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets"
    # The prompt-attribute annotator (`uniroute annotate`): any OpenAI-compatible chat endpoint, e.g. a local
    # model server at http://127.0.0.1:8000/v1; the key is sent as a bearer token when given.
    annotator_url: str | None = None
    annotator_model: str = ""
    annotator_key: SecretStr | None = None
    annotator_timeout_seconds: float = 60.0

    @field_validator("build_kinds", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        # "a,b" or blank from the environment; a sequence from Python is taken as it is.
        return comma_separated(value) if isinstance(value, str) else value

    @property
    def build_embedder_name(self) -> str:
        """The embedder of nightly builds and `uniroute evaluate` (see build_embedder)."""
        if self.build_embedder:
            return self.build_embedder
        return self.embedder if "embedder" in self.model_fields_set else DEFAULT_BUILD_EMBEDDER

    @property
    def db_path(self) -> Path:
        return self.home / "uniroute.duckdb"

    @property
    def inbox_dir(self) -> Path:
        return self.home / "inbox"

    @property
    def spool_dir(self) -> Path:
        """Where serving writes decision records (finished files are ingested by the inbox)."""
        return self.home / "spool" / "decisions"

    @property
    def published_dir(self) -> Path:
        return self.home / "published"

    @property
    def deployments_file(self) -> Path:
        """The gateway's deployments (a LiteLLM model_list) unless `--deployments` names another file."""
        return self.home / "deployments.yaml"

    @property
    def mlflow_uri(self) -> str:
        return f"sqlite:///{(self.home / 'mlflow.db').resolve()}"

    @property
    def tracking(self) -> tuple[str, Path] | tuple[None, None]:
        """(tracking URI, artifact root) for reconciliation, or (None, None) when MLflow is switched off."""
        return (self.mlflow_uri, self.mlflow_artifacts) if self.mlflow else (None, None)

    @property
    def mlflow_artifacts(self) -> Path:
        return self.home / "mlartifacts"

    @property
    def prefect_home(self) -> Path:
        return self.home / "prefect"

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def tmp_dir(self) -> Path:
        return self.home / "tmp"

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def mlflow_sync_log(self) -> Path:
        """Where the detached MLflow follow-up of an operation writes its output (operations/mlflow_after.py)."""
        return self.logs_dir / "mlflow-sync.log"

    @property
    def reports_dir(self) -> Path:
        """Plots the commands and flows draw for people (a publication's budget plot), outside published/."""
        return self.home / "reports"

    @property
    def mlflow_ui_url(self) -> str:
        return f"http://127.0.0.1:{self.mlflow_port}"


class SettingsError(UnirouteError, ValueError):
    """An UNIROUTE_ variable whose value cannot be used; the message names the variable, its value and the repair."""


def settings_from_environment() -> Settings:
    """Settings from the UNIROUTE_ variables; SettingsError in one line naming the first bad variable."""
    try:
        return Settings()
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        name = f"UNIROUTE_{'_'.join(str(p) for p in first['loc']).upper()}" if first["loc"] else "a UNIROUTE_ variable"
        more = f" (and {len(errors) - 1} more bad UNIROUTE_ variable(s))" if len(errors) > 1 else ""
        # `from None`: pydantic's own report is 40 lines for one bad value; this line says all of it.
        raise SettingsError(f"{name}={first.get('input')!r}: {first['msg'].rstrip('.')}{more}; set it to a valid "
                            "value or unset it") from None


def apply_offline_environment(settings: Settings | None = None) -> None:
    """Switch off every download and telemetry path; point Prefect's state under UNIROUTE_HOME."""
    environment.apply_offline_environment(None if settings is None else settings.home)
