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


def test_a_count_that_moves_is_read_at_each_line(capsys) -> None:
    # make run's batch through the gateway says how many prompts are answered so far, not only that it is sending.
    answered = iter(range(1, 100))
    with heartbeat(lambda: f"sending: {next(answered)} of 99 answered", every=0.2):
        time.sleep(0.7)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) >= 2
    assert [line.split(" (")[0] for line in lines[:2]] == ["... still sending: 1 of 99 answered",
                                                          "... still sending: 2 of 99 answered"]
