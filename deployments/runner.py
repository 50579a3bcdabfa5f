"""Serve the deployments of prefect.yaml in this process, without a work pool (PREFECT_API_URL says where).

`make serve` runs it in the background for every deployment; `make run` and the tests serve only the
event-triggered onboarding with `--only uniroute-onboard/on-results-landed`.
"""

from __future__ import annotations

import argparse

from prefect import serve

from deployments.deployments import all_deployments


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="serve only this deployment, by name or flow/name (repeatable)")
    args = parser.parse_args(argv)
    deployments = [d for d in all_deployments()
                   if not args.only or d.name in args.only or f"{d.flow_name}/{d.name}" in args.only]
    if not deployments:
        parser.error(f"no deployment named {', '.join(args.only)} in prefect.yaml")
    serve(*deployments, print_starting_message=False)


if __name__ == "__main__":
    main()
