"""`make env` builds the static and ONNX model files once for the environment (deployments/embedder_files.py), and a
new home's embedders copy them instead of building their own."""

from __future__ import annotations

from pathlib import Path

import pytest

from deployments.embedder_files import ENVIRONMENT_EMBEDDERS, build_environment_files
from uniroute import embed
from uniroute.environment import ENVIRONMENT_FOLDER


@pytest.mark.slow  # builds the files if this environment has none (`make env` builds them): about a minute
def test_a_new_homes_built_embedders_are_copies_of_the_environments_files(tmp_path: Path) -> None:
    assert set(ENVIRONMENT_EMBEDDERS) == {"static", "minilm-onnx"}
    build_environment_files(say=lambda line: None)
    for name in ENVIRONMENT_EMBEDDERS:
        environments = embed.make_embedder(name, cache_dir=ENVIRONMENT_FOLDER, progress=False)
        homes = embed.make_embedder(name, cache_dir=tmp_path / "cache", progress=False)
        model_file = Path(getattr(homes, "table_file", None) or homes.model_file)
        assert model_file.is_relative_to(tmp_path / "cache" / "embedders"), (name, model_file)
        assert homes.embedder_id == environments.embedder_id  # the same bytes: the same fingerprint and id
