"""Routing quality as the docs report it: docs/results.md and its headline quality table (`results_doc`),
the embedders page (`embedders_table`), and the generated-block rewriter (`readme_block`)."""
