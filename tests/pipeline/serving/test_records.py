"""Decision ids: what uuid.uuid4().hex gives, drawn for a batch at once."""

from __future__ import annotations

import uuid

from uniroute.pipeline.serving.records import new_decision_ids


def test_decision_ids_are_random_uuid4_hex():
    ids = new_decision_ids(2000)
    assert len(set(ids)) == len(ids) == 2000
    for text in ids:
        parsed = uuid.UUID(hex=text)
        assert parsed.hex == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122
    # every other bit is drawn: each hex digit outside the version's takes many values across the batch
    assert all(len({text[i] for text in ids}) >= 4 for i in range(32) if i != 12)
    assert new_decision_ids(0) == [] and len(new_decision_ids(1)[0]) == 32
