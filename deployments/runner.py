"""Serve the deployments of prefect.yaml in this process, without a work pool (PREFECT_API_URL says where).

`make serve` runs it in the background for every deployment; `make run` and the tests serve only the
event-triggered onboarding with `--only uniroute-onboard/on-results-landed`.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from typing import Any

from prefect.exceptions import TerminationSignal
from prefect.runner import Runner

from deployments.deployments import all_deployments


class StoppableRunner(Runner):
    """Prefect's Runner, stopped by SIGTERM the way Ctrl-C stops it."""

    def handle_sigterm(self, *args: Any, **kwargs: Any) -> None:
        """Unwind the event loop (cancelling the runner, which pauses its schedules on the way out).

        Prefect's own handler calls the synchronous `stop()` inside the running loop, where it only creates the
        `astop` coroutine and drops it: every `make stop` logged "coroutine 'Runner.astop' was never awaited".
        """
        raise TerminationSignal(signal.SIGTERM)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="serve only this deployment, by name or flow/name (repeatable)")
    args = parser.parse_args(argv)
    deployments = [d for d in all_deployments()
                   if not args.only or d.name in args.only or f"{d.flow_name}/{d.name}" in args.only]
    if not deployments:
        parser.error(f"no deployment named {', '.join(args.only)} in prefect.yaml")
    runner = StoppableRunner(pause_on_shutdown=True)
    # Registering the deployments comes before the runner installs its handler: a stop then is as quiet.
    signal.signal(signal.SIGTERM, runner.handle_sigterm)
    try:
        for deployment in deployments:  # what prefect.serve does, with the runner above
            runner.add_deployment(deployment)
        asyncio.run(runner.start())
    except (KeyboardInterrupt, TerminationSignal):
        pass  # asked to stop: the runner has shut down


if __name__ == "__main__":
    main()
