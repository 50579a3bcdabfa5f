"""Cluster routers: K-means and LearnedMap maps Phi, Psi rows (pointwise and from battles) and their kinds."""
