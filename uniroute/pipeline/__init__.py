"""The library code of the operations, in wings named after them, and what is derived from them.

Wings, in the order they may import each other: `pool` (router versions in the store, the evidence behind each
model's Psi row, onboard, retire, roll back), `serving` (route, decision records, publish and its snapshots, the
user SQL), `traffic` (replay, the shadow gate, drift), `build` (the nightly build) and `tracking` (MLflow lineage,
the only MLflow importer). At the root, `reconcile` (the invariants `uniroute doctor` checks and repairs) and
`status`. It composes the lower stages (store, ingest, embed, routers, selection); none of them imports it, and
the one function per operation that the CLI and the flows call lives above it, in `uniroute.operations`.
"""
