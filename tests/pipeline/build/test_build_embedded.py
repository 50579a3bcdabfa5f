"""A build does not look its prompts up in the embedding dataset again right after a fill that covered exactly them
with its embedder (build_data.embedded_ahead: 46 s of DuckDB at 1M prompts), and does whenever anything differs."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import ingest
from tests.synthetic_logs import synthetic_long
from uniroute import embed, store
from uniroute.embed.fill import Embedded, embed_store_prompts
from uniroute.pipeline.build.matrices import embedded_ahead, load_store_index


def test_a_fill_covers_the_build_prompts_it_embedded_and_no_others(tmp_path: Path) -> None:
    logs = synthetic_long(n_prompts=120, n_models=3)
    first = logs[logs["prompt_id"].isin(sorted(logs["prompt_id"].unique())[:100])]
    first.to_parquet(tmp_path / "first.parquet", index=False)
    logs.to_parquet(tmp_path / "all.parquet", index=False)
    db = tmp_path / "uniroute.duckdb"
    ingest(db, tmp_path / "first.parquet", progress=False)
    model = embed.fit_tfidf(logs["prompt"].unique().tolist(), dim=6, seed=0, progress=False)
    with store.opened(db) as con:
        filled = embed_store_prompts(con, model)
        hashes = load_store_index(con).text_hashes
        assert filled.prompts == 100 and embedded_ahead(con, filled, model.embedder_id, hashes)
        assert not embedded_ahead(con, filled, "another:embedder", hashes)
        assert not embedded_ahead(con, None, model.embedder_id, hashes)
        # One prompt fewer than the fill saw (the same count would need the same hashes too).
        assert not embedded_ahead(con, filled, model.embedder_id, hashes.slice(1))
        other = Embedded(filled.embedder_id, filled.prompts, (filled.digest[0], filled.digest[1] ^ 1, filled.digest[2]))
        assert not embedded_ahead(con, other, model.embedder_id, hashes)
    ingest(db, tmp_path / "all.parquet", progress=False)  # 20 new prompts after the fill
    with store.opened(db) as con:
        hashes = load_store_index(con).text_hashes
        assert len(hashes) == 120 and not embedded_ahead(con, filled, model.embedder_id, hashes)
        refilled = embed_store_prompts(con, model)
        assert refilled.prompts == 120 and embedded_ahead(con, refilled, model.embedder_id, hashes)
