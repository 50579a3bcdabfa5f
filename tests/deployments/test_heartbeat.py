"""The demo's waits say something every few seconds (deployments/heartbeat.py), and stop saying it after."""

from __future__ import annotations

import time

from deployments.heartbeat import heartbeat


def test_a_line_every_few_seconds_while_waiting_and_none_after(capsys) -> None:
    with heartbeat("starting a server", every=0.2):
        time.sleep(0.7)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) >= 2 and all(line.startswith("... still starting a server (") for line in lines)
    time.sleep(0.5)
    assert capsys.readouterr().out == ""
