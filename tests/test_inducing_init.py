"""SubspaceInducingPoints.from_data on data with repeated rows: k-means runs on the distinct rows
weighted by their counts, and asking for more inducing inputs than distinct rows is refused
(repeated inducing inputs make K_ZZ singular: its float32 Cholesky returns NaN without an error,
and with jitter the repeated inputs are wasted)."""
import gpflow
import numpy as np
import pytest
import scipy.sparse
import tensorflow as tf
from gpflow.covariances import Kuu

import gpflow_ext  # noqa: F401
from gpflow_ext.inducing_variables import SubspaceInducingPoints
from gpflow_ext.inducing_variables.subspace import _distinct_rows

DISTINCT, REPEATS, D = 10, 6, 8


def _repeated_rows(seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    rows = rng.normal(size=(DISTINCT, D))
    X = np.repeat(rows, REPEATS, axis=0)[rng.permutation(DISTINCT * REPEATS)]
    return (scipy.sparse.csr_matrix(X) if sparse else X), rows


def test_distinct_rows_brute_force():
    X, rows = _repeated_rows()
    coords, counts = _distinct_rows(X)
    assert coords.shape == (DISTINCT, D) and counts.sum() == len(X)
    # brute force: every distinct row once, with its multiplicity
    for row, count in zip(coords, counts):
        assert np.sum(np.all(X == row, axis=1)) == count
    assert {tuple(r) for r in coords} == {tuple(r) for r in rows}
    # rows equal up to rounding are merged
    noisy = X + 1e-14 * np.random.default_rng(1).normal(size=X.shape)
    assert _distinct_rows(noisy)[0].shape[0] == DISTINCT


@pytest.mark.parametrize("sparse", [False, True])
def test_more_inducing_inputs_than_distinct_rows_is_refused(sparse):
    X, _ = _repeated_rows(sparse=sparse)
    with pytest.raises(ValueError, match=r"`num_inducing`=12 exceeds the 10 distinct rows"):
        SubspaceInducingPoints.from_data(X, num_inducing=12, rank=D)


def test_float32_kuu_cholesky_finite_with_repeated_rows():
    X, rows = _repeated_rows()
    with gpflow.config.as_context(gpflow.config.Config(float=np.float32, jitter=1e-6)):
        iv = SubspaceInducingPoints.from_data(X, num_inducing=DISTINCT, rank=D)
        assert iv.A.dtype == tf.float32
        kernel = gpflow.kernels.SquaredExponential(lengthscales=np.float32(1.0))
        chol = tf.linalg.cholesky(Kuu(iv, kernel, jitter=gpflow.config.default_jitter()))
        assert np.all(np.isfinite(chol.numpy()))
        # with M = number of distinct rows, the weighted k-means centres are exactly those rows
        Z = iv.Z.numpy()
        for row in rows:
            assert np.min(np.max(np.abs(Z - row), axis=1)) < 1e-4
        # the twin this guards against: repeated inducing inputs, singular K_ZZ, NaN without an error
        repeated = gpflow.inducing_variables.InducingPoints(np.concatenate([Z, Z[:2]]))
        bad = tf.linalg.cholesky(Kuu(repeated, kernel))
        assert not np.all(np.isfinite(bad.numpy()))


def test_weighted_kmeans_on_distinct_rows_matches_kmeans_on_all_rows():
    """Weights = counts give the k-means objective on all rows: the fitted centres are a local
    optimum of the full-data objective (each centre is the mean of its assigned rows)."""
    X, _ = _repeated_rows(seed=2)
    iv = SubspaceInducingPoints.from_data(X, num_inducing=4, rank=D)
    Z = iv.Z.numpy()
    assign = np.argmin(((X[:, None, :] - Z[None]) ** 2).sum(-1), axis=1)
    for m in range(4):
        np.testing.assert_allclose(Z[m], X[assign == m].mean(0), atol=1e-8)
