"""Deployments: how each pool model is called, in the YAML format LiteLLM users already keep (a `model_list` whose
`model_name` is the pool model's name and whose `litellm_params` say how it is called), and the LiteLLM Router
built from it. Keys stay `os.environ/VAR` references that LiteLLM resolves; nothing here prints a key."""

from __future__ import annotations

import os
import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from uniroute.errors import UnirouteError

# LiteLLM reads the encodings it ships and the cost map it ships: nothing downloads at run time.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

DEFAULT_TIMEOUT = 30.0  # seconds per call, unless a deployment says otherwise
DEFAULT_COOLDOWN = 30.0  # seconds a failing deployment sits out (LiteLLM's cooldown)
FAILS_BEFORE_COOLDOWN = 2  # failures in a minute before LiteLLM cools a deployment down
# Failure kinds LiteLLM counts towards a cooldown; named explicitly so that a model group with a single deployment
# (each pool model here) cools down too: LiteLLM spares such groups unless its policy names the failure.
_COOLDOWN_KINDS = ("TimeoutErrorAllowedFails", "InternalServerErrorAllowedFails",
                   "ServiceUnavailableErrorAllowedFails", "BadGatewayErrorAllowedFails", "RateLimitErrorAllowedFails")
_SECRET_KEYS = ("api_key", "aws_secret_access_key", "aws_session_token", "azure_ad_token", "vertex_credentials")


class DeploymentsError(UnirouteError, ValueError):
    """A deployments file that cannot be used (missing, not YAML, not a LiteLLM model_list)."""


@dataclass(frozen=True)
class Deployments:
    """The model_list entries of a deployments file (LiteLLM's format) and optional router settings."""

    model_list: tuple[dict[str, Any], ...]
    router_settings: dict[str, Any]
    path: Path | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The pool model names that have a deployment, in file order, once each."""
        return tuple(dict.fromkeys(str(entry["model_name"]) for entry in self.model_list))


def read_deployments(path: Path) -> Deployments:
    """The deployments of a YAML file; DeploymentsError in one line (never quoting a key) for anything off."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DeploymentsError(f"no deployments file at {path}: write one (a LiteLLM `model_list`) or give "
                               "--deployments") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise DeploymentsError(f"{path}: not a readable YAML file ({type(exc).__name__})") from None
    return deployments_of(data, path)


def deployments_of(data: Any, path: Path | None = None) -> Deployments:
    """Deployments from parsed YAML (a mapping with `model_list`, optional `router_settings`), checked."""
    where = str(path) if path is not None else "deployments"
    if not isinstance(data, dict) or not isinstance(data.get("model_list"), list) or not data["model_list"]:
        raise DeploymentsError(f"{where}: needs a non-empty `model_list` (LiteLLM's format: model_name, "
                               "litellm_params)")
    entries = []
    for i, entry in enumerate(data["model_list"], start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("model_name"), str) or not entry["model_name"]:
            raise DeploymentsError(f"{where}: model_list entry {i} has no model_name")
        params = entry.get("litellm_params")
        if not isinstance(params, dict) or not isinstance(params.get("model"), str):
            raise DeploymentsError(f"{where}: model_list entry {i} ({entry['model_name']}) has no "
                                   "litellm_params.model (e.g. openai/<name>)")
        key = params.get("api_key")
        if isinstance(key, str) and key and not key.startswith("os.environ/"):
            raise DeploymentsError(f"{where}: model_list entry {i} ({entry['model_name']}) writes its api_key in "
                                   "the file: give it as os.environ/VAR")
        entries.append(entry)
    settings = data.get("router_settings") or {}
    if not isinstance(settings, dict):
        raise DeploymentsError(f"{where}: router_settings must be a mapping")
    return Deployments(tuple(entries), dict(settings), path)


def coverage_line(pool: Sequence[str], deployed: Collection[str]) -> str:
    """One line: which pool models have no deployment, which deployments name no pool model."""
    uncovered = [m for m in pool if m not in deployed]
    strays = [m for m in deployed if m not in pool]
    if not uncovered and not strays:
        return f"deployment coverage: every pool model ({len(pool)}) has a deployment"
    parts = []
    if uncovered:
        parts.append(f"pool models without a deployment: {', '.join(uncovered)}")
    if strays:
        parts.append(f"deployments naming no pool model: {', '.join(strays)}")
    return "deployment coverage: " + "; ".join(parts)


def published_coverage(path: Path, published_dir: Path) -> str | None:
    """The coverage line of a deployments file against the published pool (what `uniroute doctor` prints); None
    when there is no deployments file or nothing published; the file's problem in one line when it is unusable."""
    from uniroute.pipeline.serving.snapshot import current_manifest

    manifest = current_manifest(published_dir) if Path(path).exists() else None
    if manifest is None:
        return None
    try:
        return coverage_line(manifest["pool"], read_deployments(path).names)
    except DeploymentsError as exc:
        return f"deployments: {exc}"


def redacted(entry: dict[str, Any]) -> dict[str, Any]:
    """A model_list entry safe to show: secret values replaced (an os.environ/VAR reference kept, it names no key)."""
    params = {k: (v if not isinstance(v, str) or v.startswith("os.environ/") or k not in _SECRET_KEYS else "***")
              for k, v in entry.get("litellm_params", {}).items()}
    return {**entry, "litellm_params": params}


def litellm_router(deployments: Deployments) -> Any:
    """LiteLLM's Router over the deployments: no retries of its own (the fall-backs are the routing table's), a
    timeout per deployment, cooldowns of failing deployments, telemetry and callbacks off."""
    # Pydantic's notes on LiteLLM's own typed dicts (at import and on first calls): nothing for a user to act on.
    warnings.filterwarnings("ignore", message=r".*using the `ReadOnly` qualifier", category=UserWarning)
    import litellm
    from litellm.router import AllowedFailsPolicy

    litellm.telemetry = False
    litellm.success_callback, litellm.failure_callback, litellm.callbacks = [], [], []
    litellm.suppress_debug_info = True
    litellm.drop_params = True
    model_list = []
    for entry in deployments.model_list:
        params = dict(entry["litellm_params"])
        params.setdefault("timeout", DEFAULT_TIMEOUT)
        model_list.append({**entry, "litellm_params": params})
    settings = {"num_retries": 0, "cooldown_time": DEFAULT_COOLDOWN, "timeout": DEFAULT_TIMEOUT,
                "allowed_fails_policy": AllowedFailsPolicy(**{k: FAILS_BEFORE_COOLDOWN for k in _COOLDOWN_KINDS}),
                **deployments.router_settings}
    return litellm.Router(model_list=model_list, **settings)
