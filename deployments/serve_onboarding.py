"""Serve only the event-triggered onboarding deployment (used by `make run` and the tests)."""

from prefect import serve

from deployments.deployments import onboarding_deployment

if __name__ == "__main__":
    serve(onboarding_deployment(), print_starting_message=False)
