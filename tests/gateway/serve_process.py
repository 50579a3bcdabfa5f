"""A gateway in its own process, as `uniroute gateway` runs it (launch.serve: uvicorn in the main thread), over the
harness's toy home and backends: `python -m tests.gateway.serve_process HOME PORT`. Its spool keeps a file open
for an hour, so only a stop signal finishes it."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.gateway.backends import Backend
from tests.gateway.harness import ToyEmbedder, deployments_yaml, publish_current, set_prices
from tests.pipeline.toy_store import save_toy_champion
from uniroute.gateway.launch import GatewayPlaces, open_gateway, serve


def main(home: Path, port: int) -> None:
    home.mkdir(parents=True, exist_ok=True)
    db_path = save_toy_champion(home / "uniroute.duckdb")
    set_prices(db_path)
    publish_current(db_path, home / "published")
    backends = {name: Backend(name).start() for name in ("cheap", "big")}
    places = GatewayPlaces(home / "published", db_path, home / "spool" / "decisions", home / "inbox",
                           deployments_yaml(home / "deployments.yaml", backends))
    gateway = open_gateway(places, embedder_of=lambda source: ToyEmbedder(), spool_seconds=3600.0)
    serve(gateway, "127.0.0.1", port)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
