"""``tf.data`` pipelines over XMC data on disk: N is bounded by the disk, not by memory.

Two sources, both yielding minibatches ``(X, Y)`` with ``X`` a ``tf.SparseTensor`` [B, D] (canonical
row-major order, values in ``dtype``) and ``Y`` a ``tf.SparseTensor`` [B, K] of positive labels (1.0),
which is what :class:`gpflow_ext.models.MLGPF` and :func:`gpflow_ext.training.fit` take:

* :class:`XMCTextSource` parses an XMC text file (plain/.gz/.xz) block by block in a Python
  generator (:func:`~gpflow_ext.data.multilabel.text.iter_xmc_chunks`); shuffling permutes the rows within
  consecutive blocks of ``shuffle_buffer`` rows (a block shuffle: rows of far-apart blocks never
  meet in a batch, so write the file in random order, as the generator and the repository do);
* :class:`XMCTFRecordSource` reads sharded TFRecord files written by :func:`write_xmc_tfrecords`
  (parsing in TF's C++ kernels): shard order shuffled, shards interleaved, rows shuffled in a buffer,
  batched, parsed per batch, prefetched.

A source is a function ``epoch -> tf.data.Dataset`` (``fit(model, source, epochs=...)``): epoch ``e``
shuffles with the seed ``seed * 1000003 + e``, so a run resumed from a checkpoint sees the same
batches. With ``shuffle_buffer=0`` the rows come in file order. ``source.blocks()`` iterates over
the features as ``scipy.sparse`` CSR blocks (for :meth:`SubspaceInducingPoints.from_stream`).

TFRecord layout: one ``tf.train.Example`` per row with int64 lists ``labels``, ``indices`` and
``values`` (the float64 values' bit patterns, so the round trip is exact), ``rows_per_shard`` rows per
file ``shard-00000-of-00012.tfrecord``, and ``xmc_meta.json`` holding N, D, K and the file names.
"""

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import tensorflow as tf

from .._io import PathLike, as_existing_file
from .text import iter_xmc_chunks, read_xmc_header

__all__ = ["XMCTextSource", "XMCTFRecordSource", "write_xmc_tfrecords", "sparse_batch_to_csr"]

_SEED_STRIDE = 1_000_003
META_FILE = "xmc_meta.json"


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _to_sparse(rows: tf.RaggedTensor, values: tf.Tensor, num_columns: int) -> tf.SparseTensor:
    """Ragged column ids [B, (n)] and their flat values [nnz] -> tf.SparseTensor [B, num_columns]."""
    indices = tf.stack([rows.value_rowids(), rows.flat_values], axis=1)  # [nnz, 2]
    batch = rows.nrows(out_type=tf.int64)
    return tf.SparseTensor(indices, values, tf.stack([batch, tf.constant(num_columns, tf.int64)]))


class _Source:
    """What both sources share: shape, seeds, the epoch function, CSR blocks."""

    num_data: int
    num_features: int
    num_labels: int

    def _batches(self, seed: int) -> tf.data.Dataset:
        """One epoch's minibatches, shuffled by ``seed`` (each source reads its own storage)."""
        raise NotImplementedError

    def __init__(self, batch_size: int, shuffle_buffer: int, seed: int, dtype):
        self.batch_size = _check_int(batch_size, "batch_size", 1)
        self.shuffle_buffer = _check_int(shuffle_buffer, "shuffle_buffer", 0)
        self.seed = _check_int(seed, "seed", 0)
        self.dtype = tf.as_dtype(dtype)

    @property
    def steps_per_epoch(self) -> int:
        """ceil(N / B)."""
        return -(-self.num_data // self.batch_size)

    def epoch_seed(self, epoch: int) -> int:
        return self.seed * _SEED_STRIDE + int(epoch)

    def __call__(self, epoch: int = 1) -> tf.data.Dataset:
        """Minibatches ``(X, Y)`` of epoch ``epoch`` (1-based; it keys the shuffle)."""
        dataset = self._batches(self.epoch_seed(epoch))
        options = tf.data.Options()
        options.deterministic = True
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(self.steps_per_epoch))
        return dataset.with_options(options).prefetch(tf.data.AUTOTUNE)


class XMCTextSource(_Source):
    """Minibatches streamed from an XMC text file; see the module docstring.

    :param path: XMC text file (plain, ``.gz`` or ``.xz``); only its header is read here.
    :param batch_size: B (the last batch of an epoch may be smaller).
    :param shuffle_buffer: rows permuted together (block shuffle; 0: file order).
    :param chunk_rows: rows parsed per block when not shuffling.
    """

    def __init__(
        self,
        path: PathLike,
        batch_size: int,
        shuffle_buffer: int = 0,
        seed: int = 0,
        chunk_rows: int = 2048,
        dtype=tf.float64,
    ):
        super().__init__(batch_size, shuffle_buffer, seed, dtype)
        self.path = as_existing_file(path, "path")
        self.chunk_rows = _check_int(chunk_rows, "chunk_rows", 1)
        self.num_data, self.num_features, self.num_labels = read_xmc_header(self.path)

    def blocks(self, chunk_rows: int = 10_000) -> Iterator[sp.csr_matrix]:
        """The features X as consecutive CSR blocks (float64), read from the file."""
        for block in iter_xmc_chunks(self.path, chunk_rows=chunk_rows):
            yield block.X

    def _rows(self, seed: int) -> Iterator[sp.csr_matrix]:
        """Blocks of rows as CSR [n, K + D] (labels then features), block-shuffled when asked."""
        rng = np.random.default_rng(seed)
        rows = max(self.shuffle_buffer, self.chunk_rows)
        for block in iter_xmc_chunks(self.path, chunk_rows=rows):
            both = sp.hstack([block.Y, block.X], format="csr")  # [n, K + D]
            yield both[rng.permutation(both.shape[0])] if self.shuffle_buffer else both

    def _batch_arrays(self, seed: int) -> Iterator[tuple[np.ndarray, ...]]:
        """Minibatches of B rows (the last may be smaller) as CSR pieces of labels and features."""
        K, pending = self.num_labels, None
        for block in self._rows(seed):
            pending = block if pending is None else sp.vstack([pending, block], format="csr")
            while pending.shape[0] >= self.batch_size:
                yield self._pieces(pending[: self.batch_size], K)
                pending = pending[self.batch_size :]
        if pending is not None and pending.shape[0]:
            yield self._pieces(pending, K)

    @staticmethod
    def _pieces(batch: sp.csr_matrix, K: int) -> tuple[np.ndarray, ...]:
        Y, X = batch[:, :K], batch[:, K:]
        X.sort_indices()
        Y.sort_indices()
        return (
            np.diff(Y.indptr),
            Y.indices.astype(np.int64),
            np.diff(X.indptr),
            X.indices.astype(np.int64),
            X.data.astype(np.float64),
        )

    def _batches(self, seed: int) -> tf.data.Dataset:
        vector = lambda dtype: tf.TensorSpec([None], dtype)  # noqa: E731
        batches = tf.data.Dataset.from_generator(
            lambda: self._batch_arrays(seed),
            output_signature=(
                vector(tf.int64),
                vector(tf.int64),
                vector(tf.int64),
                vector(tf.int64),
                vector(tf.float64),
            ),
        )
        D, K, dtype = self.num_features, self.num_labels, self.dtype

        def to_sparse(label_counts, labels, feature_counts, indices, values):
            X = _to_sparse(tf.RaggedTensor.from_row_lengths(indices, feature_counts), tf.cast(values, dtype), D)
            labels = tf.RaggedTensor.from_row_lengths(labels, label_counts)
            return X, _to_sparse(labels, tf.ones_like(labels.flat_values, dtype=dtype), K)  # [B, D], [B, K]

        return batches.map(to_sparse)


def write_xmc_tfrecords(
    path: PathLike, out_dir: PathLike, rows_per_shard: int = 100_000, chunk_rows: int = 10_000
) -> list[Path]:
    """Convert an XMC text file into sharded TFRecord files (streamed: memory holds one block).

    :returns: the shard paths, in row order; ``out_dir/xmc_meta.json`` records N, D, K and them.
    """
    rows_per_shard = _check_int(rows_per_shard, "rows_per_shard", 1)
    num_data, num_features, num_labels = read_xmc_header(path)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    num_shards = max(1, -(-num_data // rows_per_shard))
    names = [f"shard-{i:05d}-of-{num_shards:05d}.tfrecord" for i in range(num_shards)]
    row = 0
    writer: tf.io.TFRecordWriter | None = None
    int64 = lambda values: tf.train.Feature(int64_list=tf.train.Int64List(value=values))  # noqa: E731
    try:
        for block in iter_xmc_chunks(path, chunk_rows=chunk_rows):
            X, Y = block.X, block.Y
            bits = X.data.astype(np.float64).view(np.int64)
            for i in range(X.shape[0]):
                if row % rows_per_shard == 0:
                    if writer is not None:
                        writer.close()
                    writer = tf.io.TFRecordWriter(str(out_dir / names[row // rows_per_shard]))
                start, stop = X.indptr[i], X.indptr[i + 1]
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "labels": int64(Y.indices[Y.indptr[i] : Y.indptr[i + 1]].tolist()),
                            "indices": int64(X.indices[start:stop].tolist()),
                            "values": int64(bits[start:stop].tolist()),
                        }
                    )
                )
                assert writer is not None  # opened at the first row of every shard
                writer.write(example.SerializeToString())
                row += 1
    finally:
        if writer is not None:
            writer.close()
    meta = {
        "num_data": num_data,
        "num_features": num_features,
        "num_labels": num_labels,
        "rows_per_shard": rows_per_shard,
        "files": names,
        "source": Path(path).name,
    }
    (out_dir / META_FILE).write_text(json.dumps(meta, indent=1))
    return [out_dir / name for name in names]


class XMCTFRecordSource(_Source):
    """Minibatches from the TFRecord shards of :func:`write_xmc_tfrecords`; see the module docstring.

    :param directory: folder holding ``xmc_meta.json`` and the shards.
    :param cycle_length: shards read at once when shuffling (file order, one at a time, otherwise).
    """

    def __init__(
        self,
        directory: PathLike,
        batch_size: int,
        shuffle_buffer: int = 0,
        seed: int = 0,
        cycle_length: int = 4,
        dtype=tf.float64,
    ):
        super().__init__(batch_size, shuffle_buffer, seed, dtype)
        directory = Path(directory)
        meta = json.loads(as_existing_file(directory / META_FILE, "directory").read_text())
        self.files = [str(directory / name) for name in meta["files"]]
        self.num_data, self.num_features, self.num_labels = meta["num_data"], meta["num_features"], meta["num_labels"]
        self.cycle_length = _check_int(cycle_length, "cycle_length", 1)

    def _batches(self, seed: int) -> tf.data.Dataset:
        files = tf.data.Dataset.from_tensor_slices(self.files)
        cycle = 1
        if self.shuffle_buffer:
            files = files.shuffle(len(self.files), seed=seed, reshuffle_each_iteration=False)
            cycle = min(self.cycle_length, len(self.files))
        records = files.interleave(
            tf.data.TFRecordDataset,
            cycle_length=cycle,
            block_length=1,
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
        if self.shuffle_buffer:
            records = records.shuffle(self.shuffle_buffer, seed=seed, reshuffle_each_iteration=False)
        spec = {
            name: tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64) for name in ("labels", "indices", "values")
        }
        D, K, dtype = self.num_features, self.num_labels, self.dtype

        def parse(serialized):
            parsed = tf.io.parse_example(serialized, spec)  # ragged [B, (n)] each
            values = tf.bitcast(parsed["values"].flat_values, tf.float64)  # [nnz]
            X = _to_sparse(parsed["indices"], tf.cast(values, dtype), D)  # [B, D]
            Y = _to_sparse(parsed["labels"], tf.ones_like(parsed["labels"].flat_values, dtype=dtype), K)  # [B, K]
            return X, Y

        return records.batch(self.batch_size).map(parse, num_parallel_calls=tf.data.AUTOTUNE)

    def blocks(self, chunk_rows: int = 10_000) -> Iterator[sp.csr_matrix]:
        """The features X as consecutive CSR blocks (float64), in file order."""
        source = XMCTFRecordSource.__new__(XMCTFRecordSource)
        source.__dict__.update(self.__dict__, batch_size=chunk_rows, shuffle_buffer=0, dtype=tf.float64)
        for X, _ in source(1):
            yield sparse_batch_to_csr(X)


def sparse_batch_to_csr(X: tf.SparseTensor) -> sp.csr_matrix:
    """A ``tf.SparseTensor`` [B, D] (eager) -> ``scipy.sparse.csr_matrix`` [B, D]."""
    indices = X.indices.numpy()
    shape = tuple(int(n) for n in X.dense_shape.numpy())
    return sp.csr_matrix((X.values.numpy(), (indices[:, 0], indices[:, 1])), shape=shape)
