"""Router learning: the `Router` and its rule, one module per router kind and baseline, and Psi.

Owns r(x) = argmin_m Phi(x) . Psi(m) + lambda * c(m) (`router`), the cluster maps Phi (`kmeans`: nearest
centroid; `learned_map`: the paper's LearnedMap), the LLM features Psi (`psi`: per-cluster mean loss, also as
a SQL group-by over the store; from pairwise preferences: `bradley_terry` strengths per cluster and
`psi_battles` rows beside the pointwise ones), how alike the LLMs' Psi rows are (`similarity`), the baselines
(`zero`: ZeroRouter; `knn`: K-NN over validation prompts; `oracles`: clairvoyant MLP and MatFac) and the routing
tables a router publishes (`tables`). Plain numpy on plain values: it reads the store only through
`psi.psi_from_store` and `psi_battles`, and never writes it, embeds or tracks.
"""
