"""`make env` builds the static and ONNX model files once for the environment (deployments/embedder_files.py), and a
new home's embedders read them instead of building their own."""

from __future__ import annotations

from pathlib import Path

import pytest

from deployments.embedder_files import ENVIRONMENT_EMBEDDERS, build_environment_files
from uniroute import embed
from uniroute.environment import ENVIRONMENT_FOLDER


@pytest.mark.slow  # builds the files if this environment has none (`make env` builds them): about a minute
def test_a_new_homes_built_embedders_read_the_environments_files(tmp_path: Path) -> None:
    assert set(ENVIRONMENT_EMBEDDERS) == {"static", "minilm-onnx"}
    build_environment_files(say=lambda line: None)
    for name in ENVIRONMENT_EMBEDDERS:
        embedder = embed.make_embedder(name, cache_dir=tmp_path / "cache", progress=False)
        model_file = Path(getattr(embedder, "table_file", None) or embedder.model_file)
        assert model_file.is_relative_to(ENVIRONMENT_FOLDER / "embedders"), (name, model_file)
        assert embedder.embedder_id.endswith(embedder.fingerprint)
    assert not (tmp_path / "cache").exists()  # nothing was built into the home
