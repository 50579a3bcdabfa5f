"""How fast one thing is: routing, `uniroute route`, ingest, the embedders, the evaluation; and the speed table
of docs/results.md from their results (`table`)."""
