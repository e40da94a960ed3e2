"""Helpers shared by several layers of gpflow_ext.

* :func:`to_input_tensor`: inputs as TensorFlow wants them (``scipy.sparse`` -> ``tf.SparseTensor``).
* :func:`dense_kron`: the dense Kronecker product of batched factors (for checks and small grids).
* :func:`cholesky_inverse_and_logdet`: L⁻¹ and log|A| of symmetric positive definite matrices, with a gradient
  from three triangular solves (:func:`solve_cholesky_inverse_and_logdet`) or three matrix products
  (:func:`matmul_cholesky_inverse_and_logdet`), whichever is faster for the dtype.
* Importing this module teaches ``check_shapes`` the shapes of ``tf.SparseTensor`` and ``scipy.sparse``
  matrices, so ``@check_shapes`` functions accept sparse inputs.

It imports only NumPy, SciPy, TensorFlow, GPflow and ``check_shapes``: every other module may use it.
"""

from typing import Any, TypeAlias

import gpflow
import numpy as np
import scipy.sparse
import tensorflow as tf
from check_shapes import register_get_shape

__all__ = [
    "InputTensor",
    "to_input_tensor",
    "dense_kron",
    "cholesky_inverse_and_logdet",
    "solve_cholesky_inverse_and_logdet",
    "matmul_cholesky_inverse_and_logdet",
]

#: What :func:`to_input_tensor` returns: a dense tensor or a ``tf.SparseTensor``.
InputTensor: TypeAlias = tf.Tensor | tf.SparseTensor


@register_get_shape(tf.SparseTensor)
def _get_sparse_tensor_shape(shaped: tf.SparseTensor, context: Any) -> Any:
    """Lets ``check_shapes`` read the (static) dense shape of a ``tf.SparseTensor``."""
    shape = shaped.shape
    if not shape:
        return None
    return tuple(shape)


_SCIPY_SPARSE_TYPES = (scipy.sparse.spmatrix,) + ((scipy.sparse.sparray,) if hasattr(scipy.sparse, "sparray") else ())


def _get_scipy_sparse_shape(shaped: Any, context: Any) -> Any:
    """Lets ``check_shapes`` read the shape of a ``scipy.sparse`` matrix (its ``len`` is undefined)."""
    return tuple(int(n) for n in shaped.shape)


for _sparse_type in _SCIPY_SPARSE_TYPES:
    register_get_shape(_sparse_type)(_get_scipy_sparse_shape)


def to_input_tensor(X: Any, dtype: tf.DType | None = None) -> InputTensor:
    """Dense array -> ``tf.Tensor``; ``scipy.sparse`` -> ``tf.SparseTensor`` (canonical order).

    :param X: an array-like, a ``scipy.sparse`` matrix or a ``tf.SparseTensor``.
    :param dtype: the dtype of the result (default ``gpflow.default_float()``).
    """
    dtype = dtype or gpflow.default_float()
    if isinstance(X, tf.SparseTensor):
        return X if X.dtype == dtype else tf.SparseTensor(X.indices, tf.cast(X.values, dtype), X.dense_shape)
    if scipy.sparse.issparse(X):
        coo = scipy.sparse.coo_matrix(X)
        indices = np.stack([coo.row, coo.col], axis=1).astype(np.int64)
        sp = tf.SparseTensor(indices, tf.constant(coo.data, dtype=dtype), coo.shape)
        return tf.sparse.reorder(sp)
    return tf.convert_to_tensor(X, dtype=dtype)


def _batch_kron(A: tf.Tensor, B: tf.Tensor) -> tf.Tensor:
    """Batched Kronecker product: ``[J, a, a] ⊗ [J, b, b] -> [J, ab, ab]``."""
    J, a, b = tf.shape(A)[0], A.shape[-1], B.shape[-1]
    out = A[:, :, None, :, None] * B[:, None, :, None, :]  # [J, a, b, a, b]
    return tf.reshape(out, [J, a * b, a * b])


def dense_kron(factors: list[tf.Tensor]) -> tf.Tensor:
    """⊗ of batched factors ``[J, m_d, m_d]`` as a dense ``[J, m, m]`` matrix, m = ∏_d m_d (for checks).

    :param factors: one ``[J, m_d, m_d]`` tensor per dimension, dimension 0 slowest.
    """
    out = factors[0]
    for f in factors[1:]:
        out = _batch_kron(out, f)
    return out


def _inverse_gradient_by_solves(L: tf.Tensor, d_L_inv: tf.Tensor, d_logdet: tf.Tensor) -> tf.Tensor:
    """Ā = L⁻ᵀ [ḡ I - Φ(Ḡ L⁻ᵀ)] L⁻¹ (unsymmetrised) by three batched triangular solves with L."""
    G_Lt = tf.linalg.adjoint(tf.linalg.triangular_solve(L, tf.linalg.adjoint(d_L_inv), lower=True))  # Ḡ L⁻ᵀ
    middle = _gradient_middle(G_Lt, d_logdet)  # [..., M, M]
    left = tf.linalg.triangular_solve(L, middle, lower=True, adjoint=True)  # L⁻ᵀ middle
    return tf.linalg.adjoint(tf.linalg.triangular_solve(L, tf.linalg.adjoint(left), lower=True, adjoint=True))


def _inverse_gradient_by_products(L_inv: tf.Tensor, d_L_inv: tf.Tensor, d_logdet: tf.Tensor) -> tf.Tensor:
    """Ā = L⁻ᵀ [ḡ I - Φ(Ḡ L⁻ᵀ)] L⁻¹ (unsymmetrised) by three batched matrix products with L⁻¹."""
    G_Lt = tf.matmul(d_L_inv, L_inv, transpose_b=True)  # [..., M, M] = Ḡ L⁻ᵀ
    middle = _gradient_middle(G_Lt, d_logdet)  # [..., M, M]
    return tf.matmul(L_inv, tf.matmul(middle, L_inv), transpose_a=True)  # [..., M, M]


def _gradient_middle(G_Lt: tf.Tensor, d_logdet: tf.Tensor) -> tf.Tensor:
    """ḡ I - Φ(Ḡ L⁻ᵀ), Φ = the lower triangle with half its diagonal."""
    diagonal = d_logdet[..., None] - 0.5 * tf.linalg.diag_part(G_Lt)  # [..., M]
    return tf.linalg.set_diag(-tf.linalg.band_part(G_Lt, -1, 0), diagonal)  # [..., M, M]


def _symmetric_part(A: tf.Tensor) -> tf.Tensor:
    return 0.5 * (A + tf.linalg.adjoint(A))


def _upstream(L_inv: tf.Tensor, logdet: tf.Tensor, d_L_inv: tf.Tensor | None, d_logdet: tf.Tensor | None):
    """The upstream gradients with ``None`` as zeros; Ḡ restricted to the lower triangle L⁻¹ lives on."""
    d_L_inv = tf.zeros_like(L_inv) if d_L_inv is None else tf.linalg.band_part(d_L_inv, -1, 0)
    return d_L_inv, tf.zeros_like(logdet) if d_logdet is None else d_logdet


@tf.custom_gradient
def _solve_cholesky_inverse_and_logdet(A: tf.Tensor):
    L = tf.linalg.cholesky(A)  # [..., M, M]
    eye = tf.eye(tf.shape(A)[-1], batch_shape=tf.shape(A)[:-2], dtype=A.dtype)  # [..., M, M]
    L_inv = tf.linalg.triangular_solve(L, eye, lower=True)  # [..., M, M]
    logdet = 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(L)), axis=-1)  # [...]

    def grad(d_L_inv, d_logdet):
        return _symmetric_part(_inverse_gradient_by_solves(L, *_upstream(L_inv, logdet, d_L_inv, d_logdet)))

    return (L_inv, logdet), grad


def _blocked_cholesky_inverse(A: tf.Tensor, block_size: int) -> tuple[tf.Tensor, tf.Tensor]:
    """(L⁻¹ [..., n, n], log diag L [..., n]) of A = L Lᵀ by recursive 2 × 2 blocks.

    With A = [[A₁₁, ·], [A₂₁, A₂₂]]: L₂₁ = A₂₁ L₁₁⁻ᵀ, S = A₂₂ - L₂₁ L₂₁ᵀ = L₂₂ L₂₂ᵀ and
    L⁻¹ = [[L₁₁⁻¹, 0], [-L₂₂⁻¹ L₂₁ L₁₁⁻¹, L₂₂⁻¹]]: matrix products except the blocks of at most ``block_size``.
    """
    n = A.shape[-1]
    if n is None or n <= block_size:  # a size unknown when traced is factorised whole
        L = tf.linalg.cholesky(A)  # [..., n, n]
        eye = tf.eye(tf.shape(A)[-1], batch_shape=tf.shape(A)[:-2], dtype=A.dtype)  # [..., n, n]
        return tf.linalg.triangular_solve(L, eye, lower=True), tf.math.log(tf.linalg.diag_part(L))
    h = n // 2
    L11_inv, log_diag_1 = _blocked_cholesky_inverse(A[..., :h, :h], block_size)  # [..., h, h]
    L21 = tf.matmul(A[..., h:, :h], L11_inv, transpose_b=True)  # [..., n - h, h]
    schur = A[..., h:, h:] - tf.matmul(L21, L21, transpose_b=True)  # [..., n - h, n - h]
    L22_inv, log_diag_2 = _blocked_cholesky_inverse(schur, block_size)  # [..., n - h, n - h]
    L21_inv = -tf.matmul(L22_inv, tf.matmul(L21, L11_inv))  # [..., n - h, h]
    upper = tf.zeros_like(tf.linalg.adjoint(L21))  # [..., h, n - h]
    L_inv = tf.concat([tf.concat([L11_inv, upper], -1), tf.concat([L21_inv, L22_inv], -1)], -2)  # [..., n, n]
    return L_inv, tf.concat([log_diag_1, log_diag_2], -1)


def _matmul_cholesky_inverse_and_logdet(A: tf.Tensor, block_size: int):
    @tf.custom_gradient
    def inverse_and_logdet(A: tf.Tensor):
        L_inv, log_diag = _blocked_cholesky_inverse(A, block_size)  # [..., M, M], [..., M]
        logdet = 2.0 * tf.reduce_sum(log_diag, axis=-1)  # [...]

        def grad(d_L_inv, d_logdet):
            return _symmetric_part(_inverse_gradient_by_products(L_inv, *_upstream(L_inv, logdet, d_L_inv, d_logdet)))

        return (L_inv, logdet), grad

    return inverse_and_logdet(A)


def _check_square(A: Any, name: str = "A") -> tf.Tensor:
    A = tf.convert_to_tensor(A)
    if A.shape.rank is not None and (A.shape.rank < 2 or (A.shape[-1] is not None and A.shape[-1] != A.shape[-2])):
        raise ValueError(f"{name} must be a batch of square matrices [..., M, M], got shape {A.shape}")
    return A


def solve_cholesky_inverse_and_logdet(A) -> tuple[tf.Tensor, tf.Tensor]:
    """(L⁻¹ [..., M, M], log|A| [...]) for symmetric positive definite A [..., M, M] with A = L Lᵀ.

    The value is ``tf.linalg.cholesky`` and ``tf.linalg.triangular_solve`` of the identity; the gradient is
    formed directly from L by three batched triangular solves, Ā = sym(L⁻ᵀ [ḡ I - Φ(Ḡ L⁻ᵀ)] L⁻¹) with Ḡ the
    gradient at L⁻¹ (its lower triangle), ḡ the gradient at log|A| and Φ the lower triangle with half its
    diagonal (the Cholesky backward pass of Murray 2016 with L̄ = -L⁻ᵀ Ḡ L⁻ᵀ, plus ḡ A⁻¹ from log|A|), instead
    of differentiating the triangular solve and then the Cholesky factorisation (whose TensorFlow gradient
    inverts L again): the same numbers to rounding, at a fraction of the work.
    """
    return _solve_cholesky_inverse_and_logdet(_check_square(A))


def matmul_cholesky_inverse_and_logdet(A, block_size: int = 128) -> tuple[tf.Tensor, tf.Tensor]:
    """(L⁻¹, log|A|) as :func:`solve_cholesky_inverse_and_logdet`, computed by matrix products.

    L⁻¹ comes from recursive 2 × 2 blocks (:func:`_blocked_cholesky_inverse`: only blocks of at most
    ``block_size`` rows are factorised and solved), and the gradient Ā = sym(L⁻ᵀ [ḡ I - Φ(Ḡ L⁻ᵀ)] L⁻¹) is three
    batched products with L⁻¹ instead of three triangular solves with L. The products do twice the
    multiply-adds of the solves but run at the matrix-multiply rate, which on CPU in float32 is several
    times the rate of the factorisation and the solves; L⁻¹ is the same matrix either way to rounding.
    A matrix size unknown when traced is factorised whole.
    """
    A = _check_square(A)
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")
    return _matmul_cholesky_inverse_and_logdet(A, block_size)


def cholesky_inverse_and_logdet(A) -> tuple[tf.Tensor, tf.Tensor]:
    """(L⁻¹ [..., M, M], log|A| [...]) for symmetric positive definite A [..., M, M] with A = L Lᵀ.

    float64 by :func:`solve_cholesky_inverse_and_logdet`, other dtypes by
    :func:`matmul_cholesky_inverse_and_logdet` (the faster of the two for each in ``benchmarks.mlgpf_speed``:
    in float64 a batched triangular solve runs near the matrix-multiply rate on CPU, in float32 far below it).
    """
    A = _check_square(A)
    if A.dtype == tf.float64:
        return solve_cholesky_inverse_and_logdet(A)
    return matmul_cholesky_inverse_and_logdet(A)
