"""What is neither the product nor a measurement: the generators of the docs pages that quote saved results
(`pages/`) and the mutation testing of the core modules (`mutation/`, `make mutation`).

Tools may read what benchmarks/ wrote (its results and the commands that wrote them); benchmarks/ never imports
tools/, so a measurement never depends on how a page presents it.
"""
