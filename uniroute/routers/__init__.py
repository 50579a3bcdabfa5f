"""Router learning: the router kinds behind one routing surface, their fits, and Psi.

Owns the rule r(x) = argmin_m gamma(x, m) + lambda * c(m) with its pool, budgets and embedder check (`rule`),
and the router kinds that supply gamma: the cluster router gamma = Phi(x) . Psi(m) (`router`) with its maps Phi
(`kmeans`: nearest centroid; `learned_map`: the paper's LearnedMap, trained in numpy by `learned_map_net` with
`adam`), and K-NN over the validation prompts (`knn`: its label table plays Psi). Also the LLM features Psi
(`psi`: per-cluster mean loss from labels or from the results' group-by, count-aware shrinkage; from pairwise
preferences: `bradley_terry` strengths per cluster and `psi_battles` rows beside the pointwise ones), how alike
the LLMs' Psi rows are (`similarity`), the baselines (`zero`: ZeroRouter; `oracles`: clairvoyant MLP and
MatFac), routers as npz bytes (`serialize`) and the routing tables a router publishes (`tables`). Plain numpy on
plain values: it never touches the store (pipeline.psi_data reads Psi's evidence and hands it over as frames),
embeds or tracks.
"""
