"""``Kuu``/``Kuf`` for :class:`~gpflow_ext.inducing_variables.SubspaceInducingPoints` (eq. 5–6, A.6).

Registered with GPflow's dispatchers, so ``gpflow.covariances.Kuu(iv, kernel)`` and
``gpflow.covariances.Kuf(iv, kernel, X)`` (and hence stock ``gpflow.models.SVGP``) use them.

All kernels are evaluated through inner products with the inducing inputs Z = A X̃:

* ``Z Zᵀ   = A K_X̃ Aᵀ``         with K_X̃ = X̃ X̃ᵀ [R, R] precomputed once        (eq. 5)
* ``Z X_bᵀ = A (X_b X̃ᵀ)ᵀ``       with X_b X̃ᵀ [B, R] one (sparse) product per step (eq. 6)
* ``‖z‖²   = diag(A K_X̃ Aᵀ)``, ``‖x‖²`` from the (sparse) minibatch itself           (A.6)

Supported kernels:

* :class:`gpflow.kernels.Linear` (scalar variance) and :class:`gpflow.kernels.Polynomial`;
* every :class:`gpflow.kernels.IsotropicStationary` kernel with a scalar lengthscale
  (SquaredExponential, Matern12/32/52, RationalQuadratic, Exponential) through the squared
  distance ‖x − z‖² = ‖x‖² + ‖z‖² − 2 x·z and the kernel's own ``K_r2``;
* :class:`gpflow.kernels.Sum` / :class:`gpflow.kernels.Product` of supported kernels.

A setting that cannot be honoured in the subspace (ARD lengthscales or variances, ``active_dims``,
other kernel classes) raises ``ValueError``/``NotImplementedError`` instead of computing something
wrong.  Minibatch inputs may be dense ``[B, D]`` tensors or ``tf.SparseTensor`` of dense shape
``[B, D]``; :func:`Kff` evaluates the kernel's own covariance on such inputs (stock kernels cannot
take a ``tf.SparseTensor``). :class:`gpflow_ext.posteriors.SubspacePosterior`, registered with GPflow's
``get_posterior_class``, makes stock ``SVGP.predict_f``/``predict_y``/``elbo`` use :func:`Kff` and
accept ``tf.SparseTensor`` and (for prediction) ``scipy.sparse`` inputs.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from check_shapes import check_shapes
from gpflow.covariances.dispatch import Kuf, Kuu
from gpflow.kernels import IsotropicStationary, Kernel, Linear, Polynomial, Product, Sum

from ..inducing_variables.subspace import SubspaceInducingPoints
from ..utilities import InputTensor, to_input_tensor

__all__ = [
    "Kff",
    "Kuu_subspace",
    "Kuf_subspace",
    "inducing_covariances",
    "project_inputs",
]


# ---------------------------------------------------------------------------------------------
# kernel settings we can honour
# ---------------------------------------------------------------------------------------------


def _check_supported(kernel: Kernel) -> None:
    if isinstance(kernel, (Sum, Product)):
        for sub in kernel.kernels:
            _check_supported(sub)
        return
    dims = kernel.active_dims
    if not (isinstance(dims, slice) and dims == slice(None, None, None)):
        raise ValueError(
            f"{type(kernel).__name__}.active_dims={dims!r}: subspace inducing inputs Z = A X̃ mix all "
            "input dimensions, so kernels restricted to `active_dims` are not supported"
        )
    if isinstance(kernel, Linear):
        if kernel.variance.shape.ndims != 0:
            raise ValueError(
                f"{type(kernel).__name__}.variance has shape {kernel.variance.shape}: subspace inducing "
                "inputs need a scalar (non-ARD) variance, since only X̃ X̃ᵀ is precomputed"
            )
        if type(kernel) not in (Linear, Polynomial):
            raise NotImplementedError(
                f"{type(kernel).__name__} is not supported by SubspaceInducingPoints (Linear, Polynomial "
                "and isotropic stationary kernels are)"
            )
        return
    if isinstance(kernel, IsotropicStationary):
        if kernel.lengthscales.shape.ndims != 0:
            raise ValueError(
                f"{type(kernel).__name__}.lengthscales has shape {kernel.lengthscales.shape}: subspace "
                "inducing inputs need a scalar (isotropic) lengthscale; ARD lengthscales would need "
                "X̃ diag(ℓ⁻²) X̃ᵀ for every value of ℓ"
            )
        return
    raise NotImplementedError(
        f"{type(kernel).__name__} is not supported by SubspaceInducingPoints: use Linear, Polynomial, "
        "an isotropic stationary kernel (SquaredExponential, Matern*, RationalQuadratic, Exponential) "
        "or a Sum/Product of these; or use gpflow.inducing_variables.InducingPoints(iv.Z) for small D"
    )


def _kernel_from_inner(kernel: Kernel, inner: tf.Tensor, sq1: tf.Tensor, sq2: tf.Tensor, same: bool) -> tf.Tensor:
    """k(a_i, b_j) from the inner products ``inner`` [I, J] and squared norms sq1 [I], sq2 [J].

    ``same`` marks a square matrix of a set with itself (its diagonal distances are exactly 0).
    """
    if isinstance(kernel, Sum):
        return tf.add_n([_kernel_from_inner(k, inner, sq1, sq2, same) for k in kernel.kernels])
    if isinstance(kernel, Product):
        return tf.reduce_prod(tf.stack([_kernel_from_inner(k, inner, sq1, sq2, same) for k in kernel.kernels]), axis=0)
    if isinstance(kernel, Polynomial):
        return (kernel.variance * inner + kernel.offset) ** kernel.degree  # [I, J]
    if isinstance(kernel, Linear):
        return kernel.variance * inner  # [I, J]
    # isotropic stationary: r² = (‖a‖² + ‖b‖² − 2 a·b) / ℓ²
    dist = sq1[:, None] + sq2[None, :] - 2.0 * inner  # [I, J]
    dist = tf.maximum(dist, 0.0)
    if same:
        dist = tf.linalg.set_diag(dist, tf.zeros_like(sq1))
    r2 = dist / tf.square(kernel.lengthscales)  # [I, J]
    return kernel.K_r2(r2)


def _kernel_diag_from_sq(kernel: Kernel, sq: tf.Tensor) -> tf.Tensor:
    """k(x_i, x_i) from the squared norms sq [N]."""
    if isinstance(kernel, Sum):
        return tf.add_n([_kernel_diag_from_sq(k, sq) for k in kernel.kernels])
    if isinstance(kernel, Product):
        return tf.reduce_prod(tf.stack([_kernel_diag_from_sq(k, sq) for k in kernel.kernels]), axis=0)
    if isinstance(kernel, Polynomial):
        return (kernel.variance * sq + kernel.offset) ** kernel.degree  # [N]
    if isinstance(kernel, Linear):
        return kernel.variance * sq  # [N]
    return kernel.K_r2(tf.zeros_like(sq))  # [N]


# ---------------------------------------------------------------------------------------------
# projections
# ---------------------------------------------------------------------------------------------


def _check_input_dim(X: InputTensor, input_dim: int, name: str = "Xnew") -> None:
    static_dim = X.shape[-1] if X.shape.rank is not None else None
    if static_dim is not None and int(static_dim) != int(input_dim):
        raise ValueError(f"`{name}` has {int(static_dim)} columns but the inducing inputs live in D = {input_dim}")


def _squared_norms(X: InputTensor) -> tf.Tensor:
    """‖x_i‖² for dense or sparse X [N, D] -> [N] (cost nnz)."""
    if isinstance(X, tf.SparseTensor):
        return tf.math.unsorted_segment_sum(tf.square(X.values), X.indices[:, 0], num_segments=X.dense_shape[0])
    return tf.reduce_sum(tf.square(X), axis=-1)


def _sparse_times_dense(X: tf.SparseTensor, dense: tf.Tensor) -> tf.Tensor:
    """X [N, D] (sparse) times dense [D, R] through TF's CSR kernel (cost nnz·R; ~4x faster on CPU
    than ``tf.sparse.sparse_dense_matmul`` in our measurements). Not differentiated: X is data and
    the basis is fixed."""
    X = tf.sparse.reorder(X)  # CSR conversion needs row-major order
    csr = tf.raw_ops.SparseTensorToCSRSparseMatrix(indices=X.indices, values=X.values, dense_shape=X.dense_shape)
    product = tf.raw_ops.SparseMatrixMatMul(a=csr, b=dense)  # [N, R]
    return tf.ensure_shape(product, [X.shape[0], dense.shape[1]])


def project_inputs(inducing_variable: SubspaceInducingPoints, X: Any) -> tuple[tf.Tensor, tf.Tensor]:
    """X X̃ᵀ [N, R] and ‖x‖² [N] for dense or ``tf.SparseTensor`` X [N, D].

    For sparse X the product is a CSR sparse–dense matmul that gathers rows of X̃ᵀ: cost nnz(X)·R,
    independent of D.
    """
    X = to_input_tensor(X, inducing_variable.basis_t.dtype)
    _check_input_dim(X, inducing_variable.input_dim)
    if isinstance(X, tf.SparseTensor):
        proj = _sparse_times_dense(X, inducing_variable.basis_t)  # [N, R]
    else:
        proj = tf.matmul(X, inducing_variable.basis_t)  # [N, R]
    return proj, _squared_norms(X)


def _times_gram(inducing_variable: SubspaceInducingPoints, A: tf.Tensor) -> tf.Tensor:
    """A X̃ X̃ᵀ [M, R] (just A for an orthonormal basis)."""
    if inducing_variable.orthonormal_basis:
        return tf.convert_to_tensor(A)
    return tf.matmul(A, inducing_variable.basis_gram)  # [M, R]


def _inducing_inner(inducing_variable: SubspaceInducingPoints) -> tuple[tf.Tensor, tf.Tensor]:
    """Z Zᵀ = A K_X̃ Aᵀ [M, M] and ‖z‖² [M], cost O(R² M + R M²) (eq. 5)."""
    A = inducing_variable.A  # [M, R]
    AG = _times_gram(inducing_variable, A)  # [M, R]
    inner = tf.matmul(AG, A, transpose_b=True)  # [M, M]
    sq = tf.reduce_sum(AG * A, axis=-1)  # [M]
    return inner, sq


# ---------------------------------------------------------------------------------------------
# dispatcher registrations
# ---------------------------------------------------------------------------------------------


@Kuu.register(SubspaceInducingPoints, Kernel)
@check_shapes(
    "inducing_variable: [M, D, 1]",
    "return: [M, M]",
)
def Kuu_subspace(inducing_variable: SubspaceInducingPoints, kernel: Kernel, *, jitter: float = 0.0) -> tf.Tensor:
    """K_ZZ for Z = A X̃ (eq. 5; A.6 eq. 26 for stationary kernels), cost O(R²M + RM²)."""
    _check_supported(kernel)
    inner, sq = _inducing_inner(inducing_variable)  # [M, M], [M]
    Kzz = _kernel_from_inner(kernel, inner, sq, sq, same=True)  # [M, M]
    if jitter:
        Kzz += jitter * tf.eye(inducing_variable.num_inducing, dtype=Kzz.dtype)
    return Kzz


@Kuf.register(SubspaceInducingPoints, Kernel, object)
@check_shapes(
    "inducing_variable: [M, D, 1]",
    "Xnew: [N, D_in]",  # D_in = D is checked below with a ValueError
    "return: [M, N]",
)
def Kuf_subspace(inducing_variable: SubspaceInducingPoints, kernel: Kernel, Xnew: Any) -> tf.Tensor:
    """K_ZX for Z = A X̃ and a dense or sparse minibatch X (eq. 6; A.6), cost O(nnz·R + N R M)."""
    _check_supported(kernel)
    proj, sq_x = project_inputs(inducing_variable, Xnew)  # [N, R], [N]
    A = inducing_variable.A  # [M, R]
    inner = tf.matmul(A, proj, transpose_b=True)  # [M, N]
    if _needs_norms(kernel):
        sq_z = tf.reduce_sum(_times_gram(inducing_variable, A) * A, axis=-1)  # [M]
    else:
        sq_z = tf.zeros(tf.shape(A)[:1], dtype=A.dtype)
    return _kernel_from_inner(kernel, inner, sq_z, sq_x, same=False)  # [M, N]


def _needs_norms(kernel: Kernel) -> bool:
    if isinstance(kernel, (Sum, Product)):
        return any(_needs_norms(k) for k in kernel.kernels)
    return not isinstance(kernel, Linear)


@check_shapes(
    "X: [N, D]",
    "return: [N] if not full_cov",
    "return: [N, N] if full_cov",
)
def Kff(kernel: Kernel, X: Any, *, full_cov: bool = False) -> tf.Tensor:
    """The kernel's own covariance k(X, X) for dense or ``tf.SparseTensor`` X.

    Dense X goes straight to ``kernel(X, full_cov=full_cov)`` (identical to stock GPflow). Sparse X
    is handled for the kernels :class:`SubspaceInducingPoints` supports: the diagonal costs nnz(X);
    the full covariance densifies the minibatch (N·D memory), so use it on small prediction batches.
    """
    X = to_input_tensor(X)
    if not isinstance(X, tf.SparseTensor):
        return kernel(X, full_cov=full_cov)
    _check_supported(kernel)
    sq = _squared_norms(X)  # [N]
    if not full_cov:
        return _kernel_diag_from_sq(kernel, sq)  # [N]
    inner = _sparse_gram(X)  # [N, N]
    return _kernel_from_inner(kernel, inner, sq, sq, same=True)  # [N, N]


def _sparse_gram(X: tf.SparseTensor) -> tf.Tensor:
    """X Xᵀ [N, N] for sparse X [N, D] as a CSR x CSR product (never an [N, D] dense copy)."""
    X = tf.sparse.reorder(X)
    csr = tf.raw_ops.SparseTensorToCSRSparseMatrix(indices=X.indices, values=X.values, dense_shape=X.dense_shape)
    product = tf.raw_ops.SparseMatrixSparseMatMul(a=csr, b=csr, type=X.dtype, transpose_b=True)
    gram = tf.raw_ops.CSRSparseMatrixToDense(sparse_input=product, type=X.dtype)  # [N, N]
    return tf.ensure_shape(gram, [X.shape[0], X.shape[0]])


def inducing_covariances(
    inducing_variable: Any, kernel: Kernel, X: Any, *, full_cov: bool = False
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """What a sparse GP's conditional needs at X: K_zz ``[M, M]``, K_zx ``[M, N]`` and k(X, X)
    (``[N]``, or ``[N, N]`` with ``full_cov``); ``Kuu``/``Kuf`` dispatch on the inducing variable."""
    Kmm = Kuu(inducing_variable, kernel)  # [M, M]
    Kmn = Kuf(inducing_variable, kernel, X)  # [M, N]
    Knn = Kff(kernel, X, full_cov=full_cov)  # [N] or [N, N]
    return Kmm, Kmn, Knn
