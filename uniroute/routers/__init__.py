"""Router learning: the router kinds behind one routing surface and one registry, their fits, and Psi.

Owns the rule r(x) = argmin_m gamma(x, m) + lambda * c(m) with its pool, budgets, embedder check and what a router
answers about itself (`rule`), the routers that supply gamma: the cluster router gamma = Phi(x) . Psi(m)
(`router`) with its maps Phi (`kmeans`: nearest centroid; `learned_map`: the paper's LearnedMap, trained in numpy
by `learned_map_net` with `adam`), and K-NN over the validation prompts (`knn`: its label table plays Psi).
A router kind is one object (`kinds`: the RouterKind protocol, Tuned and the one registry; one module per kind:
`kind_kmeans`, `kind_learnedmap`, `kind_knn`; their ladders in `ladders`): its label, ladder, tuning (through the
selection engine passed in), simulated onboarding, held-out gamma, served router and storage. Also the LLM
features Psi (`psi`: per-cluster mean loss from labels or from the results' group-by, count-aware shrinkage;
from pairwise
preferences: `bradley_terry` strengths per cluster and `psi_battles` rows beside the pointwise ones), how alike
the LLMs' Psi rows are (`similarity`), the baselines (`zero`: ZeroRouter; `oracles`: clairvoyant MLP and
MatFac), routers as npz bytes (`serialize`, dispatching through the registry) and the routing tables a router
publishes (`tables`); one lambda path behind budgets and deferral curves (`lambda_path`). Plain numpy on plain
values: it never touches the store (pipeline.pool.psi_data reads Psi's evidence and hands it over as frames), embeds
or tracks.
"""
