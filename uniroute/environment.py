"""What the process environment says before pydantic is imported: the offline switches every edge sets, the
plain UNIROUTE_ values a one-prompt `uniroute route` needs, and where the environment keeps what `make env` built.

Importing pydantic and pydantic-settings costs a cold process about 0.25 s, half of what a one-prompt route may
take. `quick_settings` reads the few settings that route uses when every UNIROUTE_ variable set is one it can read
exactly as `settings.Settings` would (a name it knows, in capitals, a value in the plain form pydantic accepts);
for anything else it returns None and the caller builds `Settings` as before, so a bad value still gets Settings'
one-line error and an unusual one Settings' reading. tests/test_environment.py checks that both agree.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

# What `make env` builds once for every home of this environment, beside the interpreter (read only afterwards): the
# empty Prefect and MLflow databases new homes start from, the built embedders' model files.
ENVIRONMENT_FOLDER = Path(sys.prefix) / "share" / "uniroute"


def linked_into_place(target: Path, write: Callable[[Path], object]) -> bool:
    """write(part) fills a new file beside target, which then becomes target by a hard link, which never replaces a
    file; whether it did. A file another process made at target meanwhile stays; a write that fails leaves neither
    target nor the part; a filesystem without hard links makes nothing (False: the caller's way without a copy)."""
    handle, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    os.close(handle)
    part = Path(name)
    try:
        write(part)
        try:
            os.link(part, target)
        except OSError:  # FileExistsError: made meanwhile; EPERM or ENOTSUP: no hard links on this filesystem
            return False
        return True
    finally:
        part.unlink(missing_ok=True)

# Every switch that stops a library from reaching the network or phoning home. Applied by the
# edges (CLI, flows, tests) before anything heavy is imported; never at import time.
OFFLINE_ENVIRONMENT = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "true",  # MLflow accepts only "true"
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_CLOUD_ENABLE_ORCHESTRATION_TELEMETRY": "false",
    "TOKENIZERS_PARALLELISM": "false",
    # Quiet: MLflow's per-download progress bars and INFO lines are not for users of a command line.
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
    "MLFLOW_LOGGING_LEVEL": "WARNING",
    # transformers draws a "Loading weights" bar whenever MiniLM loads (building the static and ONNX models,
    # the minilm embedder); it reads this switch of huggingface_hub when it is imported.
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    # LiteLLM fetches its model cost map from GitHub when imported unless told to read the copy it ships: set here,
    # not only beside the gateway, because a test backend or a benchmark may import LiteLLM first.
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}

PREFIX = "UNIROUTE_"


def apply_offline_environment(home: Path | None = None) -> None:
    """Switch off every download and telemetry path; point Prefect's state under home (UNIROUTE_HOME)."""
    for key, value in OFFLINE_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    if home is not None:
        os.environ.setdefault("PREFECT_HOME", str((home / "prefect").resolve()))


@dataclass(frozen=True)
class QuickSettings:
    """The settings a one-prompt route reads, with Settings' defaults and Settings' folders under home."""

    home: Path = Path(".uniroute")
    record_decisions: bool = True
    record_prompts: bool = False
    explore_share: float = 0.0
    explore_margin: float = 0.02

    @property
    def db_path(self) -> Path:
        return self.home / "uniroute.duckdb"

    @property
    def published_dir(self) -> Path:
        return self.home / "published"

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def spool_dir(self) -> Path:
        return self.home / "spool" / "decisions"


_TRUE, _FALSE = {"1", "true", "yes", "on", "t", "y"}, {"0", "false", "no", "off", "f", "n"}
_NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?")
# The variables quick_settings reads, as pydantic reads their plain values; the others it leaves to Settings.
# Names that route does not use (embedder, seed, mlflow) are checked all the same: Settings would refuse a bad one.
_READERS = {
    "home": lambda text: Path(text) if text else None,
    "embedder": lambda text: text,
    "seed": lambda text: int(text) if text.isascii() and text.isdigit() else None,
    "mlflow": lambda text: True if text in _TRUE else False if text in _FALSE else None,
    "record_decisions": lambda text: True if text in _TRUE else False if text in _FALSE else None,
    "record_prompts": lambda text: True if text in _TRUE else False if text in _FALSE else None,
    "explore_share": lambda text: float(text) if _NUMBER.fullmatch(text) else None,
    "explore_margin": lambda text: float(text) if _NUMBER.fullmatch(text) else None,
}


def quick_settings(environ: Mapping[str, str] | None = None) -> QuickSettings | None:
    """The settings a one-prompt route reads from the UNIROUTE_ variables, or None when any variable set is one
    only Settings can judge (see the module's docstring)."""
    environ = os.environ if environ is None else environ
    values = {}
    for key, text in environ.items():
        if not key.upper().startswith(PREFIX):
            continue
        name = key[len(PREFIX):].lower()
        if not key.isupper() or name not in _READERS:
            return None
        value = _READERS[name](text)
        if value is None:
            return None
        values[name] = value
    return QuickSettings(**{k: v for k, v in values.items() if k in QuickSettings.__dataclass_fields__})
