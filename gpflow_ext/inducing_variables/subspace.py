"""Subspace inducing inputs Z = A X̃ (Section 2.2, eq. 4 of *Fully scalable Gaussian processes
using subspace inducing inputs*).

Each inducing input is a linear combination of R fixed basis vectors (the rows of X̃ ∈ R^{R×D}) with
trainable weights A ∈ R^{M×R}, so the number of inducing-input parameters is M·R instead of M·D.

Input design (how the kernel matrices stay independent of D)
------------------------------------------------------------
The model is given the *raw* inputs X, either as a dense ``[B, D]`` tensor or as a
``tf.SparseTensor`` of dense shape ``[B, D]`` (what :func:`gpflow_ext.training.fit` produces from a
``scipy.sparse`` CSR matrix).  The covariances in :mod:`gpflow_ext.covariances.subspace` project a
minibatch once per step, ``X_b X̃ᵀ`` (``[B, R]``, a sparse–dense product that costs nnz(X_b)·R, the
paper's choice for sparse data), and use the Gram matrix ``K_X̃ = X̃ X̃ᵀ`` (``[R, R]``) computed once
in the constructor.  Afterwards ``K_Z = A K_X̃ Aᵀ`` (eq. 5) and ``K_XbZ = (X_b X̃ᵀ) Aᵀ`` (eq. 6) cost
O(R M² + B R M), whatever D is.  Because the inputs are the raw X, stock GPflow models
(``gpflow.models.SVGP``) work unchanged with dense X and give the same ELBO as
``InducingPoints(A @ X̃)``.

Example
-------
>>> import numpy as np, gpflow, gpflow_ext
>>> X = np.random.default_rng(0).normal(size=(200, 30))
>>> Y = np.sin(X[:, :1])
>>> iv = gpflow_ext.inducing_variables.SubspaceInducingPoints.from_data(X, num_inducing=20, rank=10)
>>> model = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(lengthscales=5.0),
...                            gpflow.likelihoods.Gaussian(), iv, num_data=200)
>>> float(model.elbo((X, Y))) < 0.0
True
"""

from __future__ import annotations

from typing import Any

import gpflow
import numpy as np
import scipy.linalg
import scipy.sparse
import tensorflow as tf
from check_shapes import Shape, check_shapes
from gpflow.base import Parameter
from gpflow.inducing_variables import InducingVariables

from ..validation import accepts_sparse_inputs, check_positive_int

__all__ = ["SubspaceInducingPoints", "subspace_basis"]


def _validate_data_matrix(X: Any, name: str = "X") -> Any:
    """Return X as a float64 numpy array or CSR matrix after checking rank, emptiness, finiteness."""
    if scipy.sparse.issparse(X):
        X = scipy.sparse.csr_matrix(X, dtype=np.float64)
        values = X.data
    else:
        X = np.asarray(X)
        if X.dtype == object or not np.issubdtype(X.dtype, np.number):
            raise TypeError(f"`{name}` must be a numeric array or scipy.sparse matrix, got dtype {X.dtype}")
        X = X.astype(np.float64, copy=False)
        values = X
    if X.ndim != 2:
        raise ValueError(f"`{name}` must be a 2-D matrix [N, D], got shape {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"`{name}` must be non-empty, got shape {X.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"`{name}` contains NaN or inf values")
    return X


def subspace_basis(X: Any, rank: int, *, seed: int = 0, n_iter: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Truncated SVD X ≈ U S Vᵀ with ``rank`` components (Section 2.2).

    Works on a dense array or on a ``scipy.sparse`` matrix without densifying it (randomized SVD,
    Halko et al., through :func:`sklearn.utils.extmath.randomized_svd`); small dense problems use an
    exact LAPACK SVD, and a sparse X with min(N, D) <= 5000 the exact eigenpairs of its small Gram
    matrix (a sparse product).

    :param X: data matrix [N, D], dense or scipy.sparse.
    :param rank: R, with 1 <= R <= min(N, D).
    :return: (U [N, R], S [R], Vt [R, D]); the basis X̃ is Vt.
    """
    X = _validate_data_matrix(X)
    N, D = X.shape
    rank = check_positive_int(rank, "rank")
    if not 1 <= rank <= min(N, D):
        raise ValueError(f"`rank` must satisfy 1 <= rank <= min(N, D) = {min(N, D)}, got {rank}")
    rank = int(rank)
    dense_small = (not scipy.sparse.issparse(X)) and N * D <= 4_000_000
    if scipy.sparse.issparse(X) and min(N, D) <= 5000 and not dense_small:
        # few rows (or columns): eigen-decompose the small Gram matrix of the sparse X exactly
        U, S, Vt = _svd_via_gram(X, rank)
        if U is not None:
            return _fix_signs(U, S, Vt)
    if dense_small or rank > 0.5 * min(N, D):
        # exact SVD: cheap here, and randomized SVD is inaccurate when R is close to min(N, D)
        dense = X.toarray() if scipy.sparse.issparse(X) else X
        U, S, Vt = scipy.linalg.svd(dense, full_matrices=False, lapack_driver="gesdd")
        U, S, Vt = U[:, :rank], S[:rank], Vt[:rank]
    else:
        from sklearn.utils.extmath import randomized_svd

        U, S, Vt = randomized_svd(X, n_components=rank, n_oversamples=10 + rank // 10, n_iter=n_iter, random_state=seed)
    return _fix_signs(U, S, Vt)


def _distinct_rows(coords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``coords`` [N, R] and their counts. Rows equal up to the SVD's rounding
    (1e-9 of the largest entry) count as one, so identical rows of X are merged."""
    scale = float(np.max(np.abs(coords))) if coords.size else 0.0
    if scale == 0.0:
        return coords[:1], np.array([coords.shape[0]], dtype=np.float64)
    keys = np.round(coords / (scale * 1e-9))
    _, first, counts = np.unique(keys, axis=0, return_index=True, return_counts=True)
    order = np.sort(first)  # keep the data order (deterministic k-means++ seeding)
    counts_by_first = dict(zip(first.tolist(), counts.tolist()))
    return coords[order], np.array([counts_by_first[i] for i in order], dtype=np.float64)


def _fix_signs(U: np.ndarray, S: np.ndarray, Vt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Deterministic sign convention: the largest-magnitude entry of each right vector is positive."""
    rank = S.shape[0]
    signs = np.sign(Vt[np.arange(rank), np.argmax(np.abs(Vt), axis=1)])
    signs[signs == 0] = 1.0
    return U * signs, S, Vt * signs[:, None]


def _svd_via_gram(X: Any, rank: int) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """Leading SVD of a sparse X with min(N, D) small, from the eigenpairs of X Xᵀ (or XᵀX).

    The Gram matrix is a sparse product (never densifying X); the other singular vectors follow by
    one sparse–dense product.  Returns U = None when the R-th singular value is too small relative to
    the first for this to be accurate (the caller then uses an SVD).
    """
    N, D = X.shape
    wide = N <= D
    gram = (X @ X.T) if wide else (X.T @ X)  # [min, min], sparse
    eigvals, eigvecs = scipy.linalg.eigh(gram.toarray())
    order = np.argsort(eigvals)[::-1][:rank]
    eigvals, eigvecs = eigvals[order], eigvecs[:, order]
    if eigvals[-1] <= 1e-8 * eigvals[0]:
        return None, eigvals, eigvecs
    S = np.sqrt(eigvals)
    if wide:
        U = eigvecs  # [N, R]
        Vt = np.asarray((X.T @ (U / S)).T)  # [R, D] = S⁻¹ Uᵀ X
    else:
        Vt = eigvecs.T  # [R, D]
        U = np.asarray(X @ (eigvecs / S))  # [N, R] = X V S⁻¹
    return U, S, Vt


def _as_float_array(values: Any) -> np.ndarray:
    """``values`` as a numpy array in its own float type (float32 or float64), other types as float64."""
    values = values.numpy() if hasattr(values, "numpy") else values
    array = np.asarray(values)
    if array.dtype not in (np.float32, np.float64):
        array = np.asarray(values, dtype=np.float64)
    return array


def _check_orthonormal(basis: np.ndarray, probes: int = 4, tolerance: float = 1e-4) -> None:
    """Raise ValueError unless X̃ X̃ᵀ u = u for random u (a cheap test of X̃ X̃ᵀ = I, O(R D) per probe)."""
    u = np.random.default_rng(0).standard_normal((basis.shape[0], probes)).astype(basis.dtype)  # [R, p]
    error = np.max(np.abs(basis @ (basis.T @ u) - u)) / np.max(np.abs(u))
    if not error <= tolerance:
        raise ValueError(
            f"`orthonormal=True` but the basis rows are not orthonormal (X̃ X̃ᵀ u differs from u by {error:.2e})"
        )


def _kmeans_weights(
    coords: np.ndarray, num_inducing: int, rank: int, seed: int, max_iter: int, sampled: str
) -> np.ndarray:
    """A [M, R]: k-means centres of the rows' coordinates in the basis (Section 2.2).

    k-means runs on the distinct rows weighted by their counts (the same objective as on all rows):
    with fewer distinct rows than M, k-means would return repeated centres: a singular K_ZZ (its
    float32 Cholesky gives NaN without an error; with jitter the repeats are wasted)."""
    coords, counts = _distinct_rows(coords)
    if coords.shape[0] < num_inducing:
        raise ValueError(
            f"`num_inducing`={num_inducing} exceeds the {coords.shape[0]} distinct rows of X in its "
            f"rank-{rank} subspace{sampled}: repeated inducing inputs make K_ZZ singular; use "
            f"num_inducing <= {coords.shape[0]}"
        )
    from sklearn.cluster import KMeans

    kmeans = KMeans(n_clusters=int(num_inducing), n_init=1, max_iter=max_iter, random_state=seed)
    return kmeans.fit(coords, sample_weight=counts).cluster_centers_


class SubspaceInducingPoints(InducingVariables):
    """Inducing inputs restricted to a fixed R-dimensional subspace: Z = A X̃ (eq. 4).

    :param basis: X̃ [R, D], fixed (not trained); stored transposed ([D, R]) so that a sparse
        minibatch gathers rows of it.
    :param A: initial combination weights [M, R], a trainable :class:`gpflow.Parameter`
        (set ``trainable_A=False`` for the paper's fixed-Z "f-" variants).
    :param trainable_A: whether A is optimised.
    :param orthonormal: ``True`` declares X̃ X̃ᵀ = I (to 1e-4, e.g. a basis computed in float32):
        the O(R² D) Gram product is skipped (checked on random probe vectors, O(R D)); ``None``
        computes X̃ X̃ᵀ and detects orthonormality to 100 machine epsilons.

    The Gram matrix ``basis_gram = X̃ X̃ᵀ`` [R, R] is computed once here (O(R² D)); afterwards no
    computation touches D except the per-minibatch projection ``X_b X̃ᵀ``.  When the basis is
    orthonormal to within 100 machine epsilons (as from :meth:`from_data`), ``orthonormal_basis`` is
    True and X̃ X̃ᵀ = I is used, so K_ZZ costs O(R M²).

    Use :meth:`from_data` to build X̃ from the leading right-singular vectors of X and A from k-means
    on U·S, as in the paper.  ``Z`` gives the explicit inducing inputs A X̃ [M, D] (for tests and
    small D only).
    """

    @check_shapes(
        "basis: [R, D]",
        "A: [M, R_A]",  # R_A = R is checked below with a ValueError
    )
    def __init__(
        self, basis: Any, A: Any, trainable_A: bool = True, name: str | None = None, orthonormal: bool | None = None
    ):
        super().__init__(name=name)
        dtype = gpflow.default_float()
        basis_np = _as_float_array(basis)  # float32 stays float32: at D = 2e5, R = 2000 a float64 copy is 3.3 GB
        A_np = np.asarray(A.numpy() if hasattr(A, "numpy") else A, dtype=np.float64)
        if not np.all(np.isfinite(basis_np)):
            raise ValueError("`basis` contains NaN or inf values")
        if not np.all(np.isfinite(A_np)):
            raise ValueError("`A` contains NaN or inf values")
        if A_np.shape[1] != basis_np.shape[0]:
            raise ValueError(f"`A` must have one column per basis vector: A is {A_np.shape}, basis is {basis_np.shape}")
        self.rank, self.input_dim = basis_np.shape
        # X̃ᵀ [D, R]: rows are gathered by sparse minibatches (sparse_dense_matmul)
        self.basis_t = tf.constant(np.ascontiguousarray(basis_np.T, dtype=tf.as_dtype(dtype).as_numpy_dtype))  # [D, R]
        if orthonormal:
            _check_orthonormal(basis_np)
            gram = np.eye(self.rank)
        else:
            basis64 = basis_np.astype(np.float64, copy=False)
            gram = basis64 @ basis64.T  # [R, R] = X̃ X̃ᵀ
        self.basis_gram = tf.constant(gram, dtype=dtype)  # [R, R]
        # an orthonormal basis (the SVD's) has X̃ X̃ᵀ = I: Z Zᵀ = A Aᵀ then, saving O(M R²) per step
        tolerance = 100.0 * np.finfo(tf.as_dtype(dtype).as_numpy_dtype).eps
        self.orthonormal_basis = bool(orthonormal) or bool(np.max(np.abs(gram - np.eye(self.rank))) <= tolerance)
        self.A = Parameter(A_np, dtype=dtype, trainable=trainable_A, name="A")  # [M, R]

    @classmethod
    def from_data(
        cls,
        X: Any,
        num_inducing: int,
        rank: int,
        seed: int = 0,
        *,
        trainable_A: bool = True,
        kmeans_max_iter: int = 100,
        kmeans_sample: int | None = 100_000,
    ) -> SubspaceInducingPoints:
        """Build X̃ and A from data as in Section 2.2.

        X̃ = the ``rank`` leading right-singular vectors of X (truncated SVD; a ``scipy.sparse`` X is
        never densified), A = the centroids of k-means with ``num_inducing`` clusters on U·S (the
        coordinates of the rows of X in the basis, so A X̃ are the projected cluster centres).

        :param X: training inputs [N, D], numpy array or scipy.sparse matrix.
        :param num_inducing: M, with 1 <= M <= N.
        :param rank: R, with 1 <= R <= min(N, D).
        :param seed: seed of the randomized SVD and of k-means.
        :param kmeans_sample: k-means runs on at most this many rows of U·S (random subset).
        """
        X = _validate_data_matrix(X)
        N = X.shape[0]
        num_inducing = check_positive_int(num_inducing, "num_inducing")
        if not 1 <= num_inducing <= N:
            raise ValueError(
                f"`num_inducing` must satisfy 1 <= num_inducing <= N = {N} (number of rows of X), got {num_inducing}"
            )
        U, S, Vt = subspace_basis(X, rank, seed=seed)
        coords = U * S  # [N, R] = X X̃ᵀ (the rows of X in the basis)
        rng = np.random.default_rng(seed)
        subsampled = kmeans_sample is not None and N > kmeans_sample
        if subsampled:
            coords = coords[rng.choice(N, size=kmeans_sample, replace=False)]
        sampled = f" (in a random sample of kmeans_sample={kmeans_sample} rows)" if subsampled else ""
        A = _kmeans_weights(coords, num_inducing, rank, seed, kmeans_max_iter, sampled)
        return cls(Vt, A, trainable_A=trainable_A)

    @classmethod
    def from_stream(
        cls,
        blocks: Any,
        num_inducing: int,
        rank: int,
        num_features: int,
        seed: int = 0,
        *,
        passes: int = 3,
        oversample: int | None = None,
        trainable_A: bool = True,
        kmeans_max_iter: int = 100,
        kmeans_sample: int = 20_000,
        work_dtype: Any = np.float64,
    ) -> SubspaceInducingPoints:
        """Build X̃ and A as :meth:`from_data` does, from data read in row blocks (Section 2.2).

        X̃ comes from a randomized subspace iteration on XᵀX with ``passes`` passes over the
        blocks (:func:`~gpflow_ext.inducing_variables.subspace_stream.streamed_subspace_basis`; exact
        when rank(X) <= R + oversampling), A from k-means on the coordinates X_s X̃ᵀ of
        ``kmeans_sample`` random rows (computed in the last pass). X is never held whole.

        :param blocks: a function returning a fresh iterable of row blocks each call (e.g.
            ``gpflow_ext.data.XMCTextSource(...).blocks``) or a re-iterable such as a list or a
            ``tf.data.Dataset`` of ``(X, Y)`` batches; blocks are scipy.sparse, numpy or tf tensors.
        :param num_features: D.
        :param work_dtype: float type of the [D, R + oversample] work arrays (``np.float32`` halves them).
        """
        from .subspace_stream import streamed_subspace_basis

        num_inducing = check_positive_int(num_inducing, "num_inducing")
        basis = streamed_subspace_basis(
            blocks,
            rank,
            num_features,
            passes=passes,
            oversample=oversample,
            kmeans_sample=kmeans_sample,
            seed=seed,
            dtype=work_dtype,
        )
        if num_inducing > basis.num_data:
            raise ValueError(
                f"`num_inducing` must satisfy 1 <= num_inducing <= N = {basis.num_data}, got {num_inducing}"
            )
        sampled = (
            f" (in a random sample of kmeans_sample={kmeans_sample} rows)" if basis.num_data > kmeans_sample else ""
        )
        A = _kmeans_weights(basis.coords, num_inducing, rank, seed, kmeans_max_iter, sampled)
        return cls(basis.Vt, A, trainable_A=trainable_A, orthonormal=True)

    @property  # type: ignore[misc]
    @check_shapes("return: []")
    def num_inducing(self) -> int:
        return int(self.A.shape[0])

    @property
    def shape(self) -> Shape:
        return (int(self.A.shape[0]), int(self.input_dim), 1)

    @property
    def basis(self) -> tf.Tensor:
        """X̃ [R, D] (a transposed copy; for tests and small D)."""
        return tf.transpose(self.basis_t)

    @property
    def Z(self) -> tf.Tensor:
        """The explicit inducing inputs Z = A X̃ [M, D] (O(M R D); for tests and small D only)."""
        return tf.matmul(self.A, self.basis_t, transpose_b=True)  # [M, D]


@accepts_sparse_inputs.register(SubspaceInducingPoints)
def _subspace_inputs_may_be_sparse(inducing_variable: SubspaceInducingPoints) -> bool:
    """Models on subspace inducing inputs (GPflow's ``SVGP`` included) take sparse X: ``Kuf`` reads X only
    through the product X X̃ᵀ."""
    return True
