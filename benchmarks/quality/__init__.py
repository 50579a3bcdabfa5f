"""Routing quality as the docs report it: docs/results.md and the README's quality table (`results_doc`), the
embedders page (`embedders_table`), and the README-block rewriter (`readme_block`)."""
