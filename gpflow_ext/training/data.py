"""tf.data input pipelines for :func:`gpflow_ext.training.fit`.

The data live once in memory as tensors (dense arrays, or CSR as three vectors ``indptr``,
``indices``, ``values``). A ``tf.data`` pipeline produces shuffled *row-index* batches and gathers
the rows: dense rows with ``tf.gather``; sparse rows straight from the CSR vectors into a
``tf.SparseTensor`` (the matrix is never densified, the cost is O(nnz of the batch)).

Shuffling is stateless and keyed by ``(seed, epoch)``, so epoch ``e`` sees the same order whether
training ran uninterrupted or was resumed from a checkpoint.
"""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import tensorflow as tf

Batch = tuple[tf.Tensor | tf.SparseTensor, ...]


@dataclass(frozen=True)
class CSRTensors:
    """A scipy CSR matrix held as TF vectors (sorted column indices within each row)."""

    indptr: tf.Tensor  # [N + 1] int64
    indices: tf.Tensor  # [nnz] int64
    values: tf.Tensor  # [nnz]
    num_columns: int

    @classmethod
    def from_scipy(cls, matrix: sp.csr_matrix, dtype: tf.DType) -> "CSRTensors":
        matrix = sp.csr_matrix(matrix, copy=True)
        matrix.sum_duplicates()  # canonical: sorted indices, no duplicates
        return cls(
            indptr=tf.constant(matrix.indptr, dtype=tf.int64),
            indices=tf.constant(matrix.indices, dtype=tf.int64),
            values=tf.constant(matrix.data, dtype=dtype),
            num_columns=int(matrix.shape[1]),
        )

    def gather_rows(self, rows: tf.Tensor) -> tf.SparseTensor:
        """Rows ``rows`` ([B] int64) as a ``tf.SparseTensor`` [B, D] in canonical (row-major) order."""
        starts = tf.gather(self.indptr, rows)  # [B]
        limits = tf.gather(self.indptr, rows + 1)  # [B]
        positions = tf.ragged.range(starts, limits)  # [B, (nnz per row)]
        flat = positions.flat_values  # [nnz_batch]
        batch_rows = positions.value_rowids()  # [nnz_batch]
        columns = tf.gather(self.indices, flat)  # [nnz_batch]
        values = tf.gather(self.values, flat)  # [nnz_batch]
        dense_shape = tf.stack([tf.shape(rows, out_type=tf.int64)[0], tf.constant(self.num_columns, tf.int64)])
        return tf.SparseTensor(tf.stack([batch_rows, columns], axis=1), values, dense_shape)


def cast_dtype(array: np.ndarray, dtype: tf.DType) -> tf.DType:
    """Floating data become ``dtype``; integer data keep their integer type, booleans (masks) stay bool."""
    if array.dtype == bool:
        return tf.bool
    if np.issubdtype(array.dtype, np.floating):
        return dtype
    if np.issubdtype(array.dtype, np.integer):
        return tf.as_dtype(array.dtype)
    raise TypeError(f"unsupported dtype {array.dtype}")  # pragma: no cover - rejected by check_data


class ArrayData:
    """Tensors for a tuple of arrays, with a row gather that keeps the tuple structure."""

    def __init__(self, arrays: Sequence[Any], dtype: tf.DType):
        self.num_data = int(arrays[0].shape[0])
        self.parts = []
        for array in arrays:
            if sp.issparse(array):
                self.parts.append(CSRTensors.from_scipy(array, cast_dtype(array.data, dtype)))
            else:
                self.parts.append(tf.constant(array, dtype=cast_dtype(array, dtype)))

    def gather(self, rows: tf.Tensor) -> Batch:
        rows = tf.cast(rows, tf.int64)
        return tuple(
            part.gather_rows(rows) if isinstance(part, CSRTensors) else tf.gather(part, rows) for part in self.parts
        )

    def shapes(self) -> str:
        out = []
        for part in self.parts:
            if isinstance(part, CSRTensors):
                out.append(f"sparse[{self.num_data}, {part.num_columns}]")
            else:
                out.append(str(tuple(part.shape)))
        return ", ".join(out)


def epoch_order(num_data: int, seed: int, epoch: tf.Tensor, shuffle: bool) -> tf.Tensor:
    """Row order for one epoch: a stateless permutation keyed by ``(seed, epoch)`` (or 0..N-1)."""
    rows = tf.range(num_data, dtype=tf.int64)
    if not shuffle:
        return rows
    key = tf.stack([tf.constant(seed, tf.int64), tf.cast(epoch, tf.int64)])
    return tf.random.experimental.stateless_shuffle(rows, seed=key)


def index_dataset(
    num_data: int, batch_size: int, first_epoch: int, last_epoch: int, seed: int, shuffle: bool
) -> tf.data.Dataset:
    """Row-index batches [B] for epochs numbered ``first_epoch .. last_epoch - 1`` (fit numbers them
    from 1); epoch ``e`` uses :func:`epoch_order` with key ``(seed, e)``. Batches never span epochs."""
    epochs = tf.data.Dataset.range(first_epoch, last_epoch)
    return epochs.flat_map(
        lambda epoch: tf.data.Dataset.from_tensor_slices(epoch_order(num_data, seed, epoch, shuffle)).batch(batch_size)
    )


def minibatch_dataset(
    data: ArrayData,
    batch_size: int,
    first_epoch: int,
    last_epoch: int,
    seed: int,
    shuffle: bool,
    gather: bool = True,
    skip: int = 0,
    with_rows: bool = False,
) -> tf.data.Dataset:
    """Minibatches (tuples like ``data``; sparse parts as ``tf.SparseTensor``) from ``tf.data``.

    With ``gather=False`` the dataset yields the row indices only (used with ``tf.distribute``,
    where each replica gathers its own share of the rows); with ``with_rows=True`` it yields
    ``(row indices, minibatch)`` pairs. ``skip`` drops the first batches of ``first_epoch`` (a run resumed
    from a mid-epoch checkpoint continues with the same batches).
    """
    dataset = index_dataset(data.num_data, batch_size, first_epoch, last_epoch, seed, shuffle).skip(skip)
    if gather:
        gather_rows = (lambda rows: (rows, data.gather(rows))) if with_rows else data.gather
        dataset = dataset.map(gather_rows, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    options = tf.data.Options()
    options.deterministic = True
    return dataset.with_options(options).prefetch(tf.data.AUTOTUNE)


def steps_per_epoch(num_data: int, batch_size: int | None) -> int:
    """ceil(N / B) (1 for full batch)."""
    if batch_size is None or batch_size >= num_data:
        return 1
    return -(-num_data // batch_size)


# ---------------------------------------------------------------------------------------------
# what fit iterates over: one object per kind of training input
# ---------------------------------------------------------------------------------------------
class HeldData:
    """A model that holds its own data (GPR, SGPR): one full-batch step per epoch."""

    steps_per_epoch: int | None = 1
    element_spec = None
    description = "internal data"

    def epoch(self, epoch: int, skip: int = 0):
        return iter([None][skip:])

    def fingerprint(self) -> dict:
        return {"data": "held by the model"}


class ArrayInput:
    """In-memory arrays (:class:`ArrayData`), shuffled by the stateless key ``(seed, epoch)``.

    Each element is ``(row indices [B], minibatch)`` (the row indices key the per-row random numbers, see
    :mod:`gpflow_ext.randomness`); with ``gather=False`` only the row indices (each ``tf.distribute``
    replica gathers its share). One pipeline serves consecutive epochs up to ``last_epoch`` (set by the loop), so an epoch does
    not pay for starting a new pipeline."""

    def __init__(
        self,
        data: ArrayData,
        batch_size: int,
        seed: int,
        shuffle: bool,
        gather: bool = True,
        fingerprint: dict | None = None,
    ):
        self.data, self.batch_size, self.seed, self.shuffle, self.gather = data, batch_size, seed, shuffle, gather
        self.steps_per_epoch = steps_per_epoch(data.num_data, batch_size)
        self.element_spec = minibatch_dataset(
            data, batch_size, 1, 2, seed, shuffle, gather, with_rows=True
        ).element_spec
        self.description = data.shapes()
        self._fingerprint = fingerprint or {}
        self.last_epoch: int | None = None
        self._batches: Iterator[Any] | None = None
        self._next_epoch: int | None = None

    def epoch(self, epoch: int, skip: int = 0):
        if self._batches is None or epoch != self._next_epoch or skip:
            last = max(epoch, self.last_epoch or epoch)
            self._batches = iter(
                minibatch_dataset(
                    self.data,
                    self.batch_size,
                    epoch,
                    last + 1,
                    self.seed,
                    self.shuffle,
                    self.gather,
                    skip,
                    with_rows=True,
                )
            )
        self._next_epoch = epoch + 1
        for _ in range(self.steps_per_epoch - skip):
            yield next(self._batches)

    def fingerprint(self) -> dict:
        return self._fingerprint


class DatasetInput:
    """A ``tf.data.Dataset`` of minibatches (tuples of dense tensors or ``tf.SparseTensor``), one full
    pass per epoch, or a function ``epoch -> Dataset`` (1-based epochs). Floating parts are cast to
    ``dtype``. A resumed run skips the batches of the interrupted epoch that were already trained,
    so the result is exact when each epoch's dataset is deterministic (a function of the epoch, or a
    dataset whose shuffle has a seed and ``reshuffle_each_iteration=False``)."""

    def __init__(self, dataset: Any, dtype: tf.DType):
        self.make = dataset if callable(dataset) and not isinstance(dataset, tf.data.Dataset) else None
        first = self.make(1) if self.make is not None else dataset
        if not isinstance(first, tf.data.Dataset):
            raise TypeError(f"data: a function of the epoch must return a tf.data.Dataset, got {type(first).__name__}")
        spec = first.element_spec
        if not isinstance(spec, tuple):
            raise TypeError(
                f"data: the tf.data.Dataset must yield tuples of tensors such as (X, Y), got elements {spec}; "
                "use dataset.map(lambda x, y: (x, y)) or .batch() on a dataset of tuples"
            )
        for i, part in enumerate(spec):
            if not isinstance(part, (tf.TensorSpec, tf.SparseTensorSpec)):
                raise TypeError(f"data: element part {i} must be a tensor or tf.SparseTensor, got {part}")
            if part.shape.rank is not None and part.shape.rank < 1:
                raise ValueError(f"data: element part {i} must be a batch [B, ...], got shape {part.shape}")
        leading = {int(p.shape[0]) for p in spec if p.shape.rank and p.shape[0] is not None}
        if len(leading) > 1:
            raise ValueError(
                f"data: the element parts have different leading (batch) dimensions {sorted(leading)} "
                f"({[list(p.shape) for p in spec]}): is the dataset unbatched? Call .batch(B) on it"
            )
        self.dtype = dtype
        self.dataset = None if self.make is not None else self._cast(dataset)
        self.element_spec = self._cast(first).element_spec
        cardinality = int(first.cardinality())
        if cardinality == tf.data.INFINITE_CARDINALITY:
            raise ValueError("data: the tf.data.Dataset is infinite (e.g. .repeat()); fit needs one pass per epoch")
        self.steps_per_epoch = cardinality if cardinality >= 0 else None  # None: counted while iterating
        self.description = ", ".join(f"{type(p).__name__}{list(p.shape)} {p.dtype.name}" for p in self.element_spec)

    def _cast(self, dataset: tf.data.Dataset) -> tf.data.Dataset:
        def cast(*parts):
            out = []
            for part in parts:
                if part.dtype.is_floating and part.dtype != self.dtype:
                    part = (
                        tf.cast(part, self.dtype)
                        if not isinstance(part, tf.SparseTensor)
                        else tf.SparseTensor(part.indices, tf.cast(part.values, self.dtype), part.dense_shape)
                    )
                out.append(part)
            return tuple(out)

        return dataset.map(cast)

    def epoch(self, epoch: int, skip: int = 0):
        dataset = self._cast(self.make(epoch)) if self.make is not None else self.dataset
        assert dataset is not None  # set in __init__ whenever make is None
        return iter(dataset.skip(skip))

    def fingerprint(self) -> dict:
        return {
            "dataset": [str(part) for part in self.element_spec],
            "steps_per_epoch": self.steps_per_epoch,
            "epoch_function": self.make is not None,
        }
