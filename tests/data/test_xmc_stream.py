"""Streaming XMC input: chunked reader, streamed writer, tf.data sources (text and TFRecord), fit on a stream."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from gpflow_ext.data import (
    DataFormatError,
    XMCTextSource,
    XMCTextWriter,
    XMCTFRecordSource,
    iter_xmc_chunks,
    read_xmc_header,
    read_xmc_text,
    write_xmc_text,
    write_xmc_tfrecords,
)
from gpflow_ext.data.multilabel.stream import sparse_batch_to_csr

REPO = Path(__file__).resolve().parents[2]


def _stack(source, epoch=1):
    """All batches of one epoch as CSR (X, Y) and the batch sizes."""
    Xs, Ys, sizes = [], [], []
    for X, Y in source(epoch):
        Xs.append(sparse_batch_to_csr(X))
        Ys.append(sparse_batch_to_csr(Y))
        sizes.append(Xs[-1].shape[0])
    return sp.vstack(Xs, format="csr"), sp.vstack(Ys, format="csr"), sizes


def _same(A, B):
    return A.shape == B.shape and (A != B).nnz == 0


def _row_multiset(X, Y):
    return sorted((tuple(X[i].indices), tuple(X[i].data), tuple(Y[i].indices)) for i in range(X.shape[0]))


@pytest.fixture(scope="module")
def bibtex_text(data_dir, missing_dataset):
    path = data_dir / "bibtex" / "bibtex_train.xmc.txt.gz"
    if not path.exists():
        missing_dataset(f"{path} not found")
    return path, read_xmc_text(path)


def test_chunks_stack_to_the_in_memory_reader_on_bibtex(bibtex_text):
    path, data = bibtex_text
    blocks = list(iter_xmc_chunks(path, chunk_rows=700))
    assert [b.num_data for b in blocks[:-1]] == [700] * (len(blocks) - 1)
    assert _same(sp.vstack([b.X for b in blocks], format="csr"), data.X)
    assert _same(sp.vstack([b.Y for b in blocks], format="csr"), data.Y)
    assert read_xmc_header(path) == (data.num_data, data.num_features, data.num_labels)


def test_text_source_equals_the_in_memory_reader_on_bibtex(bibtex_text):
    path, data = bibtex_text
    source = XMCTextSource(path, batch_size=512)
    X, Y, sizes = _stack(source)
    assert _same(X, data.X) and _same(Y, data.Y)
    assert sizes == [512] * (len(sizes) - 1) + [data.num_data - 512 * (len(sizes) - 1)]
    assert len(sizes) == source.steps_per_epoch == int(source(1).cardinality())
    spec = source(1).element_spec
    assert [tuple(s.shape) for s in spec] == [(None, 1836), (None, 159)]


def test_shuffled_text_source_is_a_seeded_permutation(bibtex_text):
    path, data = bibtex_text
    source = XMCTextSource(path, batch_size=500, shuffle_buffer=2000, seed=3)
    X1, Y1, _ = _stack(source, epoch=1)
    X1b, _, _ = _stack(source, epoch=1)
    X2, _, _ = _stack(source, epoch=2)
    assert _same(X1, X1b)  # an epoch is reproducible (resume)
    assert not _same(X1, X2) and not _same(X1, data.X)
    assert _row_multiset(X1, Y1) == _row_multiset(data.X, data.Y)


def test_tfrecord_round_trip_and_shuffle(bibtex_text, tmp_path):
    path, data = bibtex_text
    files = write_xmc_tfrecords(path, tmp_path, rows_per_shard=1000)
    assert len(files) == 5 and all(f.exists() for f in files)
    assert json.loads((tmp_path / "xmc_meta.json").read_text())["num_data"] == data.num_data
    X, Y, _ = _stack(XMCTFRecordSource(tmp_path, batch_size=300))
    assert _same(X, data.X) and _same(Y, data.Y)  # exact: float64 values stored bit for bit
    shuffled = XMCTFRecordSource(tmp_path, batch_size=300, shuffle_buffer=1500, seed=1)
    Xs, Ys, _ = _stack(shuffled, epoch=4)
    assert _same(Xs, _stack(shuffled, epoch=4)[0]) and not _same(Xs, data.X)
    assert _row_multiset(Xs, Ys) == _row_multiset(data.X, data.Y)
    assert _same(sp.vstack(list(shuffled.blocks(chunk_rows=999)), format="csr"), data.X)  # blocks: file order


def test_chunks_keep_empty_rows_across_chunk_boundaries(tmp_path):
    path = tmp_path / "blank.txt"
    path.write_text("5 3 2\n0 0:1\n\n\n1 2:0.5\n 1:2\n\n\n")
    whole = read_xmc_text(path)
    for chunk_rows in (1, 2, 3, 10):
        blocks = list(iter_xmc_chunks(path, chunk_rows=chunk_rows))
        assert _same(sp.vstack([b.X for b in blocks], format="csr"), whole.X)
        assert _same(sp.vstack([b.Y for b in blocks], format="csr"), whole.Y)
    assert whole.num_data == 5 and whole.X.nnz == 3  # trailing blank lines are no rows


def test_chunks_report_bad_files(tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("3 2 2\n0 0:1\n")
    with pytest.raises(DataFormatError, match="N=3 rows but the file has 1"):
        list(iter_xmc_chunks(short))
    with pytest.raises(ValueError, match="chunk_rows"):
        list(iter_xmc_chunks(short, chunk_rows=0))
    with pytest.raises(ValueError, match="batch_size"):
        XMCTextSource(short, batch_size=0)


def test_streamed_writer_round_trip_and_row_count(tmp_path, rng):
    X = sp.random(50, 30, density=0.2, format="csr", random_state=1)
    Y = sp.random(50, 7, density=0.3, format="csr", random_state=2)
    Y.data[:] = 1.0
    path = tmp_path / "w.txt.gz"
    with XMCTextWriter(path, 50, 30, 7, value_format="{!r}") as writer:
        for start in range(0, 50, 16):
            writer.write(X[start : start + 16], Y[start : start + 16])
    back = read_xmc_text(path)
    assert np.array_equal(back.X.toarray(), X.toarray()) and np.array_equal(back.Y.toarray(), Y.toarray())
    with pytest.raises(ValueError, match="N=5 rows but 2 were written"):
        with XMCTextWriter(tmp_path / "bad.txt", 5, 30, 7) as writer:
            writer.write(X[:2], Y[:2])


def test_fit_on_the_stream_equals_fit_on_the_arrays(tmp_path):
    import gpflow

    from gpflow_ext.recipes.mlgpf import build_mlgpf
    from gpflow_ext.recipes.mlgpf_config import paper_config
    from gpflow_ext.training import fit

    X = sp.random(90, 40, density=0.2, format="csr", random_state=0)
    Y = sp.random(90, 12, density=0.15, format="csr", random_state=1)
    Y.data[:] = 1.0
    path = tmp_path / "tiny.txt"
    write_xmc_text(path, X, Y, value_format="{!r}")
    X, Y = read_xmc_text(path)[:2]
    config = paper_config("s-linear", num_inducing=8, num_latent_gps=3, rank=10)
    models = [build_mlgpf(config, X, Y) for _ in range(2)]
    fit(models[0], (X, Y), epochs=3, batch_size=20, shuffle=False, progress=False, learning_rate=0.05)
    history = fit(models[1], XMCTextSource(path, batch_size=20), epochs=3, progress=False, learning_rate=0.05)
    assert history.steps[-1] == 3 * 5
    for a, b in zip(models[0].trainable_parameters, models[1].trainable_parameters):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)
    assert not np.allclose(models[0].q_mu.numpy(), 0.0)  # it trained
    assert gpflow.default_float() == np.float64


def test_amazoncat_generator_statistics(tmp_path):
    out = tmp_path / "synth"
    command = [sys.executable, "-m", "benchmarks.amazoncat_synth", "--out", str(out), "--num-train", "3000",
               "--num-test", "200", "--num-features", "20000", "--num-labels", "1500", "--seed", "1"]
    subprocess.run(command, cwd=REPO, check=True, capture_output=True, timeout=300)
    train = read_xmc_text(out / "train.txt")
    assert (train.num_data, train.num_features, train.num_labels) == (3000, 20000, 1500)
    assert read_xmc_text(out / "test.txt").num_data == 200
    assert 68.0 < train.X.nnz / 3000 < 74.0  # ~71 non-zero features per row
    assert 4.8 < train.Y.nnz / 3000 < 5.3  # ~5.04 labels per row
    np.testing.assert_allclose(sp.linalg.norm(train.X, axis=1), 1.0, atol=1e-5)  # unit L2 rows
    features = np.sort(np.asarray((train.X != 0).sum(axis=0)).ravel())[::-1]
    labels = np.sort(np.asarray(train.Y.sum(axis=0)).ravel())[::-1]
    # power laws: the top 1% of features / labels carry far more than 1% of the entries
    assert features[:200].sum() / features.sum() > 0.15
    assert labels[:15].sum() / labels.sum() > 0.1
    again = tmp_path / "again"
    subprocess.run(command[:4] + [str(again)] + command[5:], cwd=REPO, check=True, capture_output=True, timeout=300)
    assert (out / "train.txt").read_bytes() == (again / "train.txt").read_bytes()  # seeded
