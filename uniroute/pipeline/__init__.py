"""Operations: the state-changing jobs users run, and what is derived from them.

Owns the nightly build (`build`, reading `build_data`), onboarding a model on frozen clusters (`onboard`,
which also retires), router versions in the store (`registry`), routing decisions for new prompts (`serving`),
published snapshots (`publish`, writing `snapshot`) and MLflow lineage (`tracking`, the only MLflow importer).
It composes the lower stages (store, ingest, embed, routers, evaluation); none of them imports it.
"""
