"""quick_settings (the plain UNIROUTE_ values a one-prompt route reads without pydantic) agrees with Settings on
every environment it reads, and leaves every other one to Settings (which then reads or refuses it)."""

from __future__ import annotations

import contextlib
import dataclasses
import os

import pytest

from uniroute.environment import QuickSettings, quick_settings
from uniroute.settings import SettingsError, settings_from_environment

READ = [{}, {"UNIROUTE_HOME": "/tmp/elsewhere"}, {"UNIROUTE_RECORD_DECISIONS": "false"},
        {"UNIROUTE_RECORD_DECISIONS": "0", "UNIROUTE_RECORD_PROMPTS": "yes"}, {"UNIROUTE_RECORD_PROMPTS": "on"},
        {"UNIROUTE_EXPLORE_SHARE": "0.25", "UNIROUTE_EXPLORE_MARGIN": "1"}, {"UNIROUTE_SEED": "007"},
        {"UNIROUTE_EMBEDDER": "tfidf", "UNIROUTE_MLFLOW": "f", "UNIROUTE_HOME": "rel/home"}]
# Values Settings reads (or refuses) in ways quick_settings does not repeat: it steps aside for them.
LEFT_TO_SETTINGS = [{"UNIROUTE_SEED": "abc"}, {"UNIROUTE_EXPLORE_SHARE": "1e-1"}, {"UNIROUTE_RECORD_DECISIONS": "TRUE"},
                    {"uniroute_home": "/tmp/lower"}, {"UNIROUTE_SQL_TIMEOUT_SECONDS": "30"}, {"UNIROUTE_HOME": ""},
                    {"UNIROUTE_EXPLORE_SHARE": "-0.5"}, {"UNIROUTE_RECORD_PROMPTS": "maybe"}]


@pytest.fixture
def environment(monkeypatch):
    for key in [k for k in os.environ if k.upper().startswith("UNIROUTE_")]:
        monkeypatch.delenv(key)

    def set_to(values: dict[str, str]) -> None:
        for key, value in values.items():
            monkeypatch.setenv(key, value)
    return set_to


@pytest.mark.parametrize("values", READ)
def test_quick_settings_read_what_settings_read(environment, values):
    environment(values)
    quick = quick_settings()
    assert quick is not None
    settings = settings_from_environment()
    for field in dataclasses.fields(QuickSettings):
        assert getattr(quick, field.name) == getattr(settings, field.name), field.name
    for folder in ("db_path", "published_dir", "cache_dir", "spool_dir"):
        assert getattr(quick, folder) == getattr(settings, folder), folder


@pytest.mark.parametrize("values", LEFT_TO_SETTINGS)
def test_quick_settings_leave_the_rest_to_settings(environment, values):
    environment(values)
    assert quick_settings() is None
    with contextlib.suppress(SettingsError):  # Settings reads it or refuses it in its one line: not quick's to say
        settings_from_environment()
