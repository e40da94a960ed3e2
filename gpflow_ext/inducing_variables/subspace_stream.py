"""The subspace basis X̃ from data streamed in row blocks (never all of X in memory).

Randomized subspace iteration (Halko, Martinsson and Tropp 2011, Algorithms 4.4 and 5.3) on the
Gram matrix ``G = Xᵀ X = Σ_b X_bᵀ X_b`` [D, D], which is never formed: each pass over the blocks
computes ``Y = G Q = Σ_b X_bᵀ (X_b Q)`` [D, L] with L = R + oversampling columns.

* pass 1: ``Y = G Ω`` for a Gaussian Ω [D, L]; ``Q = orth(Y)`` spans the dominant row space of X;
* passes 2 .. p-1 (power iterations): ``Q = orth(G Q)``, sharpening the spectrum's decay;
* pass p: ``Y = G Q`` and the Rayleigh–Ritz step ``Qᵀ G Q = W Λ Wᵀ``: ``X̃ = (Q W_{:R})ᵀ``,
  singular values ``S = √Λ_{:R}``; the rows sampled for k-means get their coordinates
  ``X_s X̃ᵀ = (X_s Q) W_{:R}`` from the same pass.

When rank(X) ≤ L, range(G Ω) is the whole row space (with probability 1) and two passes give the
exact leading right-singular vectors, up to signs. Memory: two [D, L] arrays (plus the QR's work
copy) and ``kmeans_sample × L`` coordinates; each block costs nnz(X_b)·L per product, and only the
columns a block touches are gathered and updated.
"""

from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple, TypeAlias

import numpy as np
import scipy.linalg
import scipy.sparse

__all__ = ["StreamedBasis", "streamed_subspace_basis", "as_block"]

Blocks: TypeAlias = Callable[[], Iterable[Any]] | Iterable[Any]


class StreamedBasis(NamedTuple):
    """The result of :func:`streamed_subspace_basis`."""

    S: np.ndarray  # [R] singular values
    Vt: np.ndarray  # [R, D] the basis X̃ (orthonormal rows)
    coords: np.ndarray  # [n_s, R] the sampled rows in the basis, X_s X̃ᵀ
    num_data: int  # N, rows seen per pass


def as_block(block: Any, dtype=np.float64) -> np.ndarray | scipy.sparse.csr_matrix:
    """A block of rows as CSR or a dense array: scipy.sparse, numpy, ``tf.SparseTensor``/``tf.Tensor``, or a
    tuple ``(X, Y, ...)`` (its X)."""
    if isinstance(block, tuple):
        block = block[0]
    if scipy.sparse.issparse(block):
        return scipy.sparse.csr_matrix(block, dtype=dtype)
    if hasattr(block, "dense_shape"):  # tf.SparseTensor
        indices = block.indices.numpy()
        shape = tuple(int(n) for n in block.dense_shape.numpy())
        return scipy.sparse.csr_matrix(
            (block.values.numpy().astype(dtype), (indices[:, 0], indices[:, 1])), shape=shape
        )
    return np.asarray(block.numpy() if hasattr(block, "numpy") else block, dtype=dtype)


def _iterate(blocks: Blocks, dtype) -> Iterator[Any]:
    source = blocks() if callable(blocks) else blocks
    if isinstance(source, Iterator) and not callable(blocks):
        raise TypeError(
            "blocks: a one-shot iterator cannot be read several times; pass a function returning "
            "a fresh iterable (e.g. source.blocks) or a re-iterable (list, tf.data.Dataset)"
        )
    for block in source:
        block = as_block(block, dtype)
        if block.ndim != 2:
            raise ValueError(f"blocks: each block must be a matrix [n, D], got shape {block.shape}")
        yield block


def _gram_times(blocks: Blocks, Q: np.ndarray, sample: np.ndarray | None = None):
    """Σ_b X_bᵀ (X_b Q) [D, L], the number of rows, and X_s Q for the rows in ``sample`` (sorted)."""
    D = Q.shape[0]
    out = np.zeros_like(Q)
    rows, kept = 0, []
    for X in _iterate(blocks, Q.dtype):
        if X.shape[1] != D:
            raise ValueError(f"blocks: every block must have D={D} columns, got {X.shape[1]}")
        if scipy.sparse.issparse(X):
            columns = np.unique(X.indices)  # the columns this block touches
            Xc = X[:, columns]  # [n, c]
            T = np.asarray(Xc @ Q[columns])  # [n, L] = X_b Q
            out[columns] += np.asarray(Xc.T @ T)  # [c, L]
        else:
            T = X @ Q  # [n, L]
            out += X.T @ T  # [D, L]
        if sample is not None:
            lo, hi = np.searchsorted(sample, [rows, rows + X.shape[0]])
            kept.append(T[sample[lo:hi] - rows])
        rows += X.shape[0]
    coords = np.concatenate(kept) if kept else None
    return out, rows, coords


def _orthonormal(Y: np.ndarray) -> np.ndarray:
    """An orthonormal basis of range(Y) [D, L] (economic QR)."""
    Q, _ = scipy.linalg.qr(Y, mode="economic", overwrite_a=True, check_finite=False)
    return Q


def _orthonormalize_rows(Vt: np.ndarray) -> None:
    """In place: Vt <- L⁻¹ Vt with L Lᵀ = Vt Vtᵀ (Cholesky QR; Vt [R, D] is near-orthonormal, so
    one step is stable), cost 2 R² D."""
    chol = scipy.linalg.cholesky(Vt @ Vt.T, lower=True)  # [R, R]
    Vt[...] = scipy.linalg.solve_triangular(chol, Vt, lower=True, check_finite=False)


def streamed_subspace_basis(
    blocks: Blocks,
    rank: int,
    num_features: int,
    *,
    passes: int = 3,
    oversample: int | None = None,
    kmeans_sample: int = 20_000,
    seed: int = 0,
    dtype=np.float64,
) -> StreamedBasis:
    """The ``rank`` leading right-singular vectors of X = the stacked blocks, by ``passes`` passes.

    :param blocks: a function returning a fresh iterable of row blocks (``source.blocks``), or a
        re-iterable (list, ``tf.data.Dataset``); blocks are CSR, dense, tf tensors, or ``(X, Y)`` tuples.
    :param rank: R, 1 <= R <= D.
    :param num_features: D.
    :param passes: p >= 2 reads of the data (p - 2 power iterations).
    :param oversample: extra columns L - R (default 10 + R // 10, capped at D - R).
    :param kmeans_sample: rows whose coordinates X_s X̃ᵀ are returned (uniform, without replacement).
    :param dtype: float type of the [D, L] work arrays (float32 halves their memory).
    """
    for name, value, low in (
        ("rank", rank, 1),
        ("num_features", num_features, 1),
        ("passes", passes, 2),
        ("kmeans_sample", kmeans_sample, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"`{name}` must be an integer >= {low}, got {value!r}")
    if rank > num_features:
        raise ValueError(f"`rank` must satisfy rank <= D = {num_features}, got {rank}")
    extra = 10 + rank // 10 if oversample is None else int(oversample)
    width = min(rank + max(extra, 0), num_features)  # L
    rng = np.random.default_rng(seed)
    omega = rng.standard_normal((num_features, width)).astype(dtype)  # [D, L]
    Y, num_data, _ = _gram_times(blocks, omega)  # [D, L] = G Ω
    del omega
    if num_data < rank:
        raise ValueError(f"`rank`={rank} exceeds the {num_data} rows of the data")
    sample = np.sort(rng.choice(num_data, size=min(kmeans_sample, num_data), replace=False))
    for _ in range(passes - 2):
        Q = _orthonormal(Y)
        Y, _, _ = _gram_times(blocks, Q)  # [D, L] = G Q
    Q = _orthonormal(Y)
    del Y
    Y, rows, T = _gram_times(blocks, Q, sample)  # [D, L] = G Q, [n_s, L] = X_s Q
    if rows != num_data:
        raise ValueError(
            f"blocks: the passes over the data saw {num_data} and then {rows} rows; the blocks must "
            "be the same rows every time"
        )
    small = (Q.T @ Y).astype(np.float64)  # [L, L] = Qᵀ G Q
    del Y
    eigvals, W = scipy.linalg.eigh((small + small.T) / 2)
    order = np.argsort(eigvals)[::-1][:rank]
    W = W[:, order]  # [L, R]
    S = np.sqrt(np.maximum(eigvals[order], 0.0))  # [R]
    Vt = np.empty((rank, num_features), dtype=np.float64)  # [R, D]
    Vt[...] = (Q @ W.astype(Q.dtype)).T
    del Q
    if np.finfo(dtype).eps > 1e-10:  # low-precision work arrays: re-orthonormalize in float64
        _orthonormalize_rows(Vt)
    coords = (T @ W).astype(np.float64)  # [n_s, R]
    signs = np.sign(Vt[np.arange(rank), np.argmax(np.abs(Vt), axis=1)])  # deterministic signs, as from_data
    signs[signs == 0] = 1.0
    Vt *= signs[:, None]
    coords *= signs
    return StreamedBasis(S, Vt, coords, int(num_data))
