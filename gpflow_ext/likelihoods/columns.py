"""One likelihood per column: ``gpflow.likelihoods.SwitchedLikelihood([lik_0, ..., lik_{K-1}])`` with a column
index ``likelihood_columns`` [D] (column d's entries follow ``lik_{likelihood_columns[d]}``), for models whose
outputs are the data's columns (GPLVF: ratings in one column, a binary flag in the next, counts in a third).

GPflow's ``SwitchedLikelihood`` reads the likelihood index from an extra column appended to Y; here the index is a
property of the column, given once, and every entry's term (variational expectation, predictive moments,
predictive density) comes from its own column's likelihood, evaluated on that likelihood's entries only (never on
values it cannot model). With ``likelihood_columns=None`` the one likelihood serves every column unchanged.
"""

from collections.abc import Callable

import gpflow
import numpy as np
import tensorflow as tf

__all__ = [
    "check_likelihood_columns",
    "by_column",
    "columnwise_predict_mean_and_var",
    "pairwise_variational_expectations",
]


def check_likelihood_columns(likelihood, likelihood_columns, output_dim: int) -> np.ndarray | None:
    """``likelihood_columns`` as int64 [D], or None for a single likelihood; clear errors naming the argument
    (required with, and only with, a ``SwitchedLikelihood``; integers; length D; values in [0, K); each of the
    K likelihoods a ``ScalarLikelihood`` that is not itself switched)."""
    switched = isinstance(likelihood, gpflow.likelihoods.SwitchedLikelihood)
    if likelihood_columns is None:
        if switched:
            raise ValueError(
                f"likelihood_columns is required with a SwitchedLikelihood: an integer array of length {output_dim} "
                "giving each column's index into likelihood.likelihoods"
            )
        return None
    if not switched:
        raise ValueError(
            "likelihood_columns is only for likelihood=gpflow.likelihoods.SwitchedLikelihood([...]), got likelihood "
            f"{type(likelihood).__name__}"
        )
    for k, sub in enumerate(likelihood.likelihoods):
        if not isinstance(sub, gpflow.likelihoods.ScalarLikelihood) or isinstance(
            sub, gpflow.likelihoods.SwitchedLikelihood
        ):
            raise TypeError(
                f"likelihood.likelihoods[{k}] must be a gpflow.likelihoods.ScalarLikelihood (not switched), "
                f"got {type(sub).__name__}"
            )
    columns = np.asarray(likelihood_columns)
    if columns.dtype.kind not in "iu":
        raise TypeError(f"likelihood_columns must hold integers (likelihood indices), got dtype {columns.dtype}")
    if columns.shape != (output_dim,):
        raise ValueError(
            f"likelihood_columns must have shape [D={output_dim}] (one index per column), got {columns.shape}"
        )
    num = len(likelihood.likelihoods)
    if columns.size and (columns.min() < 0 or columns.max() >= num):
        raise ValueError(
            f"likelihood_columns must lie in [0, {num}) (the SwitchedLikelihood has {num} likelihoods), got values "
            f"from {columns.min()} to {columns.max()}"
        )
    return columns.astype(np.int64)


def by_column(
    likelihood, likelihood_columns: np.ndarray | None, fn: Callable, entry_columns=None
) -> tf.Tensor | tuple[tf.Tensor, ...]:
    """``fn(lik, take)`` for each column likelihood, stitched back along the last (entry) axis.

    ``fn`` computes a tensor (or tuple of tensors) [..., E] of per-entry terms for the entries it selects with
    ``take(t, axis=-1)`` (``take`` gathers the entries of ``lik`` along ``axis``; for one likelihood it is the
    identity). ``entry_columns`` [E]: the column of each entry along that axis (default: entry e is column e,
    E = D); it may be a tensor known only at run time (the observed pairs of a minibatch)."""
    if likelihood_columns is None:
        return fn(likelihood, lambda t, axis=-1: t)
    columns = tf.constant(likelihood_columns, dtype=tf.int64)  # [D]
    if entry_columns is None:
        entry_columns = tf.range(len(likelihood_columns), dtype=tf.int64)  # [D]
    entry_likelihood = tf.gather(columns, tf.cast(entry_columns, tf.int64))  # [E]
    outputs, positions = [], []
    for k in np.unique(likelihood_columns):  # the likelihoods some column uses
        index = tf.where(tf.equal(entry_likelihood, k))[:, 0]  # [E_k]

        def take(t, axis=-1, index=index):
            return tf.gather(t, index, axis=axis)

        outputs.append(fn(likelihood.likelihoods[int(k)], take))
        positions.append(index)
    inverse = tf.math.invert_permutation(tf.concat(positions, axis=0))  # [E]

    def stitch(parts):
        return tf.gather(tf.concat(parts, axis=-1), inverse, axis=-1)  # [..., E]

    if isinstance(outputs[0], tuple):
        return tuple(stitch([out[i] for out in outputs]) for i in range(len(outputs[0])))
    return stitch(outputs)


def columnwise_predict_mean_and_var(likelihood, likelihood_columns, X, Fmu, Fvar) -> tuple[tf.Tensor, tf.Tensor]:
    """Each column's likelihood's ``predict_mean_and_var`` at q(f) = N(Fmu, Fvar) [..., D]: mean, var [..., D]."""
    return by_column(
        likelihood, likelihood_columns, lambda lik, take: lik.predict_mean_and_var(X, take(Fmu), take(Fvar))
    )


def pairwise_variational_expectations(likelihood, likelihood_columns, X, Fmu, Fvar, Y, output_index) -> tf.Tensor:
    """E_{N(f; μ_p, v_p)} log p(y_p | f) [S, P] at observed (row, column) pairs p: inputs X [S, P, Q], Fmu and Fvar
    [S, P], Y [S or 1, P]; ``output_index`` [P] the column of each pair, whose likelihood gives its term."""
    return by_column(
        likelihood,
        likelihood_columns,
        lambda lik, take: lik.variational_expectations(
            take(X, axis=-2), take(Fmu)[..., None], take(Fvar)[..., None], take(Y)[..., None]
        ),
        output_index,
    )
