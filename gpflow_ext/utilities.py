"""Helpers shared by several layers of gpflow_ext.

* :func:`to_input_tensor`: inputs as TensorFlow wants them (``scipy.sparse`` -> ``tf.SparseTensor``).
* :func:`dense_kron`: the dense Kronecker product of batched factors (for checks and small grids).
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

__all__ = ["InputTensor", "to_input_tensor", "dense_kron"]

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
