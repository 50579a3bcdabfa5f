"""The gateway: an OpenAI-compatible HTTP endpoint in the request path. It routes each chat request with the
published router (loaded once per router version, switched when `published/current` moves), calls the chosen
model through LiteLLM's Router (timeouts, retries, streaming, cooldowns), falls back down the decision's ranked
fall-backs within the request's cost cap, and writes one decision record per request with what happened. An edge
like the CLI: it may import the operations and the pipeline; only the CLI imports it."""
