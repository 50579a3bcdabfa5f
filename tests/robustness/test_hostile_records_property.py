"""Generated decision records (any JSON value in any field) through the inbox, then replay and a build's shadow
gate: never a traceback, every good record loaded once, every other line quarantined with a reason."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.robustness.test_hostile_records import _real_records, _settings, _spooled
from uniroute import operations
from uniroute.operations.context import Context
from uniroute.pipeline.traffic.replay import ReplayError, ReplaySetting, ReplayWindow, replay, replay_router
from uniroute.pipeline.traffic.shadow_config import ShadowConfig
from uniroute.pipeline.traffic.shadow_gate import shadow_gate

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
# A record of a newer schema_version refuses its file whole (by design: upgrade to read it), so that one field is
# drawn among the versions this reader knows or values that are not a version at all.
FIELD_VALUES = {"schema_version": st.none() | st.text(max_size=3) | st.integers(max_value=1) | st.floats()}


@st.composite
def records(draw: st.DrawFn, template: dict) -> dict:
    """A real record with some fields (or none) replaced by any JSON value, or dropped."""
    record = {**template, "decision_id": uuid.uuid4().hex}
    for field in draw(st.lists(st.sampled_from(sorted(template)), max_size=3, unique=True)):
        if draw(st.booleans()):
            record[field] = draw(FIELD_VALUES.get(field, JSON))
        else:
            record.pop(field)
    return record


@pytest.fixture
def home(pool, logs, monkeypatch):
    settings_ = _settings(pool, monkeypatch)
    template = _real_records(settings_, logs.prompt.unique()[:1].tolist())[0]
    return settings_, template


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_generated_records_never_crash_the_inbox_replay_or_the_shadow_gate(home, data):
    settings_, template = home
    generated = data.draw(st.lists(records(template), min_size=1, max_size=6))
    good = {**template, "decision_id": uuid.uuid4().hex}
    lines = [json.dumps(r, allow_nan=False) for r in [*generated, good]]
    name = f"decisions-{uuid.uuid4().hex}.jsonl"
    _spooled(settings_, name, lines)
    ctx = Context.of(settings_)
    run = operations.inbox(ctx, onboard_landed=False)
    [outcome] = [o for o in run.outcomes if o.name == name]
    assert outcome.status == "ingested", outcome.error
    summary = outcome.summary
    assert summary.rows_read == len(lines)
    assert summary.rows_accepted + summary.rows_duplicate + summary.rows_quarantined == len(lines)
    # One session for the checks and the replay: a connection costs ~20 ms of CPU, 60 examples open four each.
    with ctx.session("replay", inputs="generated records") as s:
        def rows(sql: str) -> list[tuple]:
            return s.con.execute(sql).fetchall()

        assert rows(f"select count(*) from decisions where decision_id = '{good['decision_id']}'") == [(1,)]
        # Every record accepted is loaded once: as many rows of this file's ids as accepted, none twice.
        ids = ", ".join(f"'{r['decision_id']}'" for r in [*generated, good]
                        if isinstance(r.get("decision_id"), str) and "'" not in r["decision_id"])
        assert rows(f"select count(*), count(distinct decision_id) from decisions where decision_id in ({ids})"
                    ) == [(summary.rows_accepted, summary.rows_accepted)]
        quarantined = rows(f"select count(*), count(reason) from decision_quarantine where path like '%{name}'")
        assert quarantined == [(summary.rows_quarantined, summary.rows_quarantined)]
        using = replay_router(s.con, "champion")
        try:
            replay(s.con, using, ReplayWindow(), ReplaySetting())
        except ReplayError as exc:  # a one-line refusal is an answer; a traceback is not
            assert "\n" not in str(exc)
        gate = shadow_gate(s.con, using.router, ShadowConfig(min_decisions=1))
        assert gate.verdict in ("pass", "refuse", "skipped") and "\n" not in gate.line
