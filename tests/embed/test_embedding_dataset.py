"""The embedding cache as Parquet partitions (uniroute/store/embeddings.py): files the workers write, the store's
`embeddings` view over them, the move of a version-1 store's table, and the sandbox that still reads no other file."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.dask_cluster import external_cluster
from tests.embed.test_embed import ALGEBRA, COOKING, CountingEmbedder
from tests.helpers import embedded
from uniroute import embed, store
from uniroute.store import embeddings as dataset
from uniroute.store.schema import schema_version

TEXTS = ALGEBRA + COOKING


@pytest.fixture(scope="module")
def tfidf() -> embed.TfidfEmbedder:
    return embed.fit_tfidf(TEXTS, dim=6, seed=0, progress=False)


def _files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.parquet"))


def test_vectors_are_partition_files_beside_the_store(db_path: Path, tfidf) -> None:
    X = embedded(db_path, TEXTS, tfidf, chunk_texts=3)
    root = db_path.parent / "embeddings"
    files = _files(root)
    assert len(files) == 3  # one file per chunk of 3 distinct texts: 8 texts
    assert not list(root.rglob("*.part"))  # renamed once written
    rows = sum(pq.read_metadata(f).num_rows for f in files)
    assert rows == len(TEXTS)
    assert "embeddings" not in {r[0] for r in duckdb.connect(str(db_path), read_only=True).execute(
        "select table_name from information_schema.tables").fetchall()}  # the files are the only copy
    np.testing.assert_allclose(X, tfidf.encode(TEXTS), atol=1e-6)
    seen = store.read_only_query(db_path, "select embedder_id, count(*) as n from embeddings group by all")
    assert seen.to_dict("records") == [{"embedder_id": tfidf.embedder_id, "n": len(TEXTS)}]


def test_the_location_is_a_setting(db_path: Path, tfidf, tmp_path: Path, monkeypatch) -> None:
    shared = tmp_path / "shared-storage"
    monkeypatch.setenv(dataset.ENV_URL, f"file://{shared}")
    embedded(db_path, ALGEBRA, tfidf)
    assert len(_files(shared)) == 1 and not (db_path.parent / "embeddings").exists()
    counting = CountingEmbedder(tfidf)
    embedded(db_path, ALGEBRA, counting)
    assert counting.seen == []  # read back from there


def test_a_rerun_task_rewrites_its_own_file(tmp_path: Path) -> None:
    vectors = np.eye(3, dtype=np.float32)
    first = dataset.write_partition(str(tmp_path), "e:1", ["a", "b", "c"], vectors)
    again = dataset.write_partition(str(tmp_path), "e:1", ["a", "b", "c"], vectors)
    assert first == again and len(_files(tmp_path)) == 1


def test_user_sql_reads_the_view_but_no_other_file(db_path: Path, tfidf, tmp_path: Path) -> None:
    embedded(db_path, ALGEBRA, tfidf)
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    assert len(store.read_only_query(db_path, "select * from embeddings")) == len(ALGEBRA)
    for sql in (f"select * from read_csv('{secret}')",
                f"select * from read_csv('{db_path.parent / 'embeddings'}/../../secret.csv')",
                f"select * from read_parquet('{tmp_path}/**/*.parquet')"):
        with pytest.raises(store.SqlRefused):
            store.read_only_query(db_path, sql)


def _version_1_store(db_path: Path, tfidf) -> np.ndarray:
    """A store as version 1 left it: the cache a table in the file, holding the texts' vectors."""
    with store.opened(db_path):
        pass
    X = tfidf.encode(TEXTS)
    con = duckdb.connect(str(db_path))
    try:
        con.execute("delete from schema_version")
        con.execute("insert into schema_version values (1, now()::timestamp, 'created')")
        con.execute((Path(__file__).parents[1] / "store" / "schema_v0" / "002_embeddings.sql").read_text())
        for text, row in zip(TEXTS, X, strict=True):
            con.execute("insert into embeddings values (sha256($t), $e, $d, $v, now()::timestamp)",
                        {"t": text, "e": tfidf.embedder_id, "d": tfidf.dim, "v": row.tolist()})
    finally:
        con.close()
    return X


def test_a_version_1_store_moves_its_vectors_to_the_dataset(db_path: Path, tfidf) -> None:
    X = _version_1_store(db_path, tfidf)
    with store.opened(db_path) as con:
        tables = {r[0] for r in con.execute("select table_name from information_schema.tables "
                                            "where table_catalog = current_database()").fetchall()}
        version = con.execute("select max(version) from schema_version").fetchall()[0][0]
    # upgraded to the newest schema (later migrations run after the move: 005 is not the last any more)
    assert version == schema_version() and not tables & {"embeddings", dataset.LEGACY_TABLE}
    assert sum(pq.read_metadata(f).num_rows for f in _files(db_path.parent / "embeddings")) == len(TEXTS)
    counting = CountingEmbedder(tfidf)
    np.testing.assert_allclose(embedded(db_path, TEXTS, counting), X, atol=1e-6)
    assert counting.seen == []  # nothing re-embedded: the vectors moved


@pytest.mark.slow
def test_workers_write_the_partitions(db_path: Path, tfidf, tmp_path: Path) -> None:
    """On an external cluster (two workers, one thread each) every task writes its file; only names come back."""
    from distributed import Client

    texts = [f"{t} variant {i}" for i in range(40) for t in TEXTS]  # 320 distinct texts
    with external_cluster(tmp_path, workers=2, threads=1) as cluster, Client(cluster.address) as client:
        with store.opened(db_path) as con:
            missing, _ = embed.embed_missing(con, texts, tfidf, client=client, task_texts=50)
        prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
        who = client.run_on_scheduler(lambda dask_scheduler: sorted(
            {ts.processing_on.address if ts.processing_on else "" for ts in dask_scheduler.tasks.values()}))
    assert missing.num_rows == len(texts) and "embed-partition" in prefixes, (prefixes, who)
    assert len(_files(db_path.parent / "embeddings")) == 7  # ceil(320 / 50) tasks, one file each
    np.testing.assert_allclose(embedded(db_path, texts, CountingEmbedder(tfidf)), tfidf.encode(texts), atol=1e-6)


@pytest.mark.slow
def test_clusters_are_fitted_and_written_on_the_workers(db_path: Path, tmp_path: Path) -> None:
    """K-means over the training prompts' partitions on two worker processes: the in-process centres and clusters
    of the same vectors, and every cached prompt's cluster written as a dataset beside the embeddings."""
    from distributed import Client

    from tests.helpers import ingest
    from tests.synthetic_logs import synthetic_long
    from uniroute.pipeline.build.clusters import cluster_dataset
    from uniroute.routers.cluster.kmeans import fit_centroids

    logs = synthetic_long(n_prompts=600, n_models=4)
    logs.to_parquet(tmp_path / "logs.parquet", index=False)
    ingest(db_path, tmp_path / "logs.parquet", progress=False)
    with store.opened(db_path) as con:
        store.execute(con, "assign_splits")  # what a build does first
        prompts = con.execute("select p.text as prompt, p.text_hash, s.split from prompts p join prompt_splits s "
                              "using (prompt_id) order by p.prompt_id").df()
    texts = prompts["prompt"].tolist()
    model = embed.fit_tfidf(texts, dim=8, seed=0, progress=False)
    X = embedded(db_path, texts, model, chunk_texts=97)  # seven partition files
    train = (prompts["split"] == "train").to_numpy()
    with external_cluster(tmp_path, workers=2, threads=1) as cluster, Client(cluster.address) as client:
        with store.opened(db_path) as con:
            result = cluster_dataset(con, model.embedder_id, model.dim, 5, seed=0, client=client)
        prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert {"rows", "partial", "assign_partition"} <= set(prefixes), prefixes
    # The workers see the training rows in partition order: the in-process fit of the same rows in that order.
    row_of = {h: i for i, h in enumerate(prompts["text_hash"])}
    keep = set(prompts["text_hash"][train])
    order = [row_of[h] for f in dataset.partition_files(str(db_path.parent / "embeddings"), model.embedder_id)
             for h in pq.read_table(f).column("text_hash").to_pylist() if h in keep]
    here = fit_centroids(X[order], 5, seed=0)
    assert result.n_train == len(order) == int(train.sum())
    np.testing.assert_allclose(result.centroids.centers, here.centers, atol=1e-4)
    written = pq.read_table(Path(result.assignments_url)).to_pandas()
    assert len(written) == len(set(texts)) and int(result.sizes.sum()) == len(written)
    by_hash = dict(zip(written["text_hash"], written["cluster"], strict=True))
    assert [by_hash[h] for h in prompts["text_hash"]] == result.centroids.assign(X).tolist()


def test_the_store_prompts_are_embedded_from_a_work_file_once_per_text(db_path: Path, tmp_path: Path) -> None:
    """embed/fill.py, in-process: every prompt a build reads gets a vector, a text shared by two prompts is encoded
    once, the work file is gone afterwards and a rerun embeds nothing."""
    from tests.helpers import ingest
    from tests.synthetic_logs import synthetic_long
    from uniroute.embed.fill import embed_store_prompts

    logs = synthetic_long(n_prompts=120, n_models=3)
    first, second = sorted(logs["prompt_id"].unique())[:2]
    logs.loc[logs["prompt_id"] == second, "prompt"] = logs.loc[logs["prompt_id"] == first, "prompt"].iloc[0]
    logs.to_parquet(tmp_path / "logs.parquet", index=False)
    ingest(db_path, tmp_path / "logs.parquet", progress=False)
    model = CountingEmbedder(embed.fit_tfidf(logs["prompt"].unique().tolist(), dim=6, seed=0, progress=False))
    with store.opened(db_path) as con:
        assert embed_store_prompts(con, model).prompts == 120
        assert sorted(model.seen) == sorted(logs["prompt"].unique()) and len(model.seen) == 119
        dataset.expose_view(con)
        hashes = con.execute("select p.text_hash, count(e.text_hash) from (select distinct text_hash from prompts) p "
                             "left join embeddings e using (text_hash) group by p.text_hash").fetchall()
        assert len(hashes) == 119 and all(n == 1 for _, n in hashes)
        assert embed_store_prompts(con, model).prompts == 120 and len(model.seen) == 119  # nothing left to embed
    assert not list((db_path.parent / "embeddings" / "work").glob("*"))
