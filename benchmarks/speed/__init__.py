"""How fast one thing is: routing, `uniroute route`, ingest, the embedders, the evaluation; and the README's speed
table from their results (`table`)."""
