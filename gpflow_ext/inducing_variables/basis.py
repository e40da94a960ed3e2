"""The subspace's basis vectors themselves as inducing inputs: Z = X̃ (A = I, M = R).

*Fully scalable Gaussian processes using subspace inducing inputs*, Section 2.2 with A fixed to the
identity. With an orthonormal basis and a linear kernel k(x, x') = σ² xᵀx', K_ZZ = σ² X̃ X̃ᵀ = σ² I, so
the preconditioned q(u_p) of eq. 8 is a diagonal Gaussian and the sparse GP is *exactly* Bayesian
linear regression on the coordinates X X̃ᵀ: f(x) = wᵀx with w ~ N(0, σ² I) restricted to the span of
X̃, plus the prior variance of the part of x outside it. With R = rank(X) nothing is approximated.
:mod:`gpflow_ext.conditionals.preconditioned` evaluates that case in O(B·R·P) per step, with no
factorisation; any other kernel goes through the generic subspace path.

Example
-------
>>> import numpy as np
>>> from gpflow_ext.inducing_variables import BasisInducingPoints
>>> X = np.random.default_rng(0).normal(size=(50, 8))
>>> iv = BasisInducingPoints.from_data(X, rank=8)
>>> iv.num_inducing, iv.orthonormal_basis, bool(iv.A.trainable)
(8, True, False)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..validation import check_positive_int
from .subspace import SubspaceInducingPoints, _check_orthonormal, _validate_data_matrix, subspace_basis

__all__ = ["BasisInducingPoints"]


class BasisInducingPoints(SubspaceInducingPoints):
    """Z = X̃ [R, D]: the R orthonormal basis vectors are the inducing inputs (A = I, not trained).

    :param basis: X̃ [R, D] with orthonormal rows (checked on random probe vectors).
    """

    def __init__(self, basis: Any, name: str | None = None):
        basis = np.asarray(basis)
        if basis.ndim != 2:
            raise ValueError(f"`basis` must be a 2-D matrix [R, D], got shape {basis.shape}")
        _check_orthonormal(basis)
        super().__init__(basis, np.eye(basis.shape[0]), trainable_A=False, name=name, orthonormal=True)

    @classmethod
    def from_data(cls, X: Any, rank: int, seed: int = 0) -> BasisInducingPoints:  # type: ignore[override]
        """X̃ = the ``rank`` leading right-singular vectors of X [N, D] (dense or scipy.sparse), as in
        :meth:`SubspaceInducingPoints.from_data`; R = min(N, D) spans every row of X."""
        X = _validate_data_matrix(X)
        rank = check_positive_int(rank, "rank")
        _, _, Vt = subspace_basis(X, rank, seed=seed)
        return cls(Vt)

    @classmethod
    def from_stream(  # type: ignore[override]
        cls,
        blocks: Any,
        rank: int,
        num_features: int,
        seed: int = 0,
        *,
        passes: int = 3,
        oversample: int | None = None,
        work_dtype: Any = np.float64,
    ) -> BasisInducingPoints:
        """X̃ from data read in row blocks, as :meth:`SubspaceInducingPoints.from_stream` builds it (a
        randomized subspace iteration with ``passes`` passes; X is never held whole), with no k-means.

        :param blocks: a function returning a fresh iterable of row blocks, or a re-iterable (list,
            ``tf.data.Dataset``); blocks are scipy.sparse, numpy or tf tensors, or ``(X, Y)`` tuples.
        :param num_features: D.
        :param work_dtype: float type of the [D, R + oversample] work arrays.
        """
        from .subspace_stream import streamed_subspace_basis

        basis = streamed_subspace_basis(
            blocks,
            rank,
            num_features,
            passes=passes,
            oversample=oversample,
            kmeans_sample=1,
            seed=seed,
            dtype=work_dtype,
        )
        return cls(basis.Vt)
