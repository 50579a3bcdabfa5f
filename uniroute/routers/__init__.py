"""Router learning: the router kinds behind one routing surface and one registry, their fits, and Psi.

The core at the root: the rule r(x) = argmin_m gamma(x, m) + lambda * c(m) with its pool, budgets, embedder check
and what a router answers about itself (`rule`), the cluster router gamma = Phi(x) . Psi(m) (`router`), the one
registry of kinds (`kinds`: the RouterKind protocol, Tuned, the ladders), routers as npz bytes (`serialize`,
dispatching through the registry), the routing tables a router publishes (`tables`) and the terms of one decision
(`explain`). The families below: `cluster/` (the maps Phi: `kmeans`, nearest centroid, and `learned_map`, the
paper's LearnedMap trained in numpy by `learned_map_net` with `adam`; Psi from labels or the results' group-by
with count-aware shrinkage, `psi`; from pairwise preferences, `bradley_terry` and `psi_battles`; `similarity` of
Psi rows; their kinds), `knn/` (K-NN over the validation prompts, its label table playing Psi), `quality_rule/`
(pools whose models cost the same), `baselines/` (ZeroRouter, the clairvoyant MLP and MatFac) and `budgets/` (one
lambda path behind budgets and deferral curves, the hard cost cap). Plain numpy on plain values: it never touches
the store (pipeline.pool.psi_data reads Psi's evidence and hands it over as frames), embeds or tracks.
"""
