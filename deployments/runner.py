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

# How long a stopping runner lets its remaining tasks (the control channel's connection handlers) end by themselves
# before the event loop closes and cancels them.
SETTLE_SECONDS = 2.0


class StoppableRunner(Runner):
    """Prefect's Runner, stopped by SIGTERM the way Ctrl-C stops it: from inside its event loop."""

    def handle_sigterm(self, *args: Any, **kwargs: Any) -> None:
        """Ask the running loop to stop the runner (`astop`), then let `serve` unwind.

        Prefect's own handler calls the synchronous `stop()` inside the running loop, where it only creates the
        `astop` coroutine and drops it: every `make stop` logged "coroutine 'Runner.astop' was never awaited".
        Raising out of the handler instead tore the loop down from inside its `select`, cancelling the control
        channel's connection handlers mid-read: the end of `make run` logged a CancelledError traceback.
        """
        try:
            loop = asyncio.get_running_loop()  # signal handlers run on the main thread, the loop's thread
        except RuntimeError:  # still registering the deployments: no loop to unwind yet
            raise TerminationSignal(signal.SIGTERM) from None
        loop.call_soon_threadsafe(self._stop_in_loop)  # threadsafe: it wakes the loop from its select

    _stopping: asyncio.Future | None = None
    _serving: asyncio.Task | None = None

    def _stop_in_loop(self) -> None:
        if self._stopping is not None:  # a second SIGTERM: the first one's stop is under way
            return
        if self.started:
            self._stopping = asyncio.ensure_future(self.astop())  # held: a task nobody references may vanish
        elif self._serving is not None:  # between asyncio.run and the runner's start: nothing to stop gracefully
            self._serving.cancel()


def quiet_cancelled_connections(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Drop what Python 3.11's asyncio logs when a stream server's connection handler is cancelled.

    Its done-callback calls `task.exception()` on a cancelled task, which raises CancelledError into the loop's
    exception handler as an ERROR with a traceback (Python 3.12 checks `task.cancelled()` first and just closes
    the transport). A runner stopping while a finished flow run's process still holds its control connection
    hit it. Every other exception goes to asyncio's default handler.
    """
    cancelled = isinstance(context.get("exception"), asyncio.CancelledError)
    if cancelled and "StreamReaderProtocol.connection_made" in str(context.get("message", "")):
        return
    loop.default_exception_handler(context)


async def serve(runner: StoppableRunner) -> None:
    """Run the runner until stopped, then give its leftover tasks a moment to end before the loop cancels them."""
    asyncio.get_running_loop().set_exception_handler(quiet_cancelled_connections)
    runner._serving = asyncio.current_task()
    await runner.start()
    leftovers = asyncio.all_tasks() - {asyncio.current_task()}
    if leftovers:
        await asyncio.wait(leftovers, timeout=SETTLE_SECONDS)


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
        asyncio.run(serve(runner))
    except (KeyboardInterrupt, TerminationSignal, asyncio.CancelledError):
        pass  # asked to stop: the runner has shut down


if __name__ == "__main__":
    main()
