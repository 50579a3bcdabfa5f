"""Baselines the routers are measured against: ZeroRouter and the clairvoyant oracles."""
