"""LiteLLM imported after the project's offline switches reads the cost map it ships: no fetch from GitHub (which,
with no network, costs three failed attempts and a warning in every process that imports it)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests import needs

needs.installed("litellm")

IMPORT = "from uniroute.settings import apply_offline_environment; apply_offline_environment(); import litellm"


def test_litellm_imported_after_the_offline_switches_fetches_no_cost_map() -> None:
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    # An unreachable proxy: a fetch attempt fails at once and LiteLLM says so on stderr.
    env.update(HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9")
    done = subprocess.run([sys.executable, "-c", IMPORT], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "model cost map" not in done.stderr, done.stderr
