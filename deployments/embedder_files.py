"""`make env`'s step that builds the built embedders' model files once for the whole environment.

The static table (distilled from MiniLM: every vocabulary token through the transformer, about half a minute of one
core) and the ONNX export of MiniLM are built into the environment's folder (uniroute/environment.py,
ENVIRONMENT_FOLDER), under the same recipe keys a home's cache uses. A home without its own copy then copies these
(uniroute/embed/artifacts.py): `make run`'s first story and a new home's first `route` build nothing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from uniroute.embed import BUILT_EMBEDDERS, make_embedder
from uniroute.embed.kinds import embedder_kind
from uniroute.environment import ENVIRONMENT_FOLDER
from uniroute.settings import apply_offline_environment

# The built embedders that are not fitted to a build's prompts (static-tuned is, from these two files).
ENVIRONMENT_EMBEDDERS = tuple(name for name in BUILT_EMBEDDERS if not embedder_kind(name).fitted)


def build_environment_files(say: Callable[[str], object] = print) -> None:
    """Each of ENVIRONMENT_EMBEDDERS built into the environment's folder unless it is there (one line each)."""
    for name in ENVIRONMENT_EMBEDDERS:
        started = time.monotonic()
        embedder = make_embedder(name, cache_dir=ENVIRONMENT_FOLDER, progress=False)
        say(f"{name}: {embedder.embedder_id} ({time.monotonic() - started:.0f} s)")


def main() -> None:
    apply_offline_environment()  # no download, no telemetry, no "Loading weights" bars
    build_environment_files(lambda line: print(line, flush=True))


if __name__ == "__main__":
    sys.exit(main())
