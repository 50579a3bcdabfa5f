"""The nightly build: the store's results as matrices, every router kind tuned, clusters on Dask, the served router
chosen, evaluated and versioned."""
