"""Metrics against brute-force dense computations and against napkinXC's implementation."""
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.stats
from napkinxc.metrics import ndcg_at_k as napkin_ndcg_at_k
from napkinxc.metrics import precision_at_k as napkin_precision_at_k

from gpflow_ext.metrics import (
    accuracy,
    gaussian_negative_log_predictive,
    mean_negative_log_predictive,
    ndcg_at_k,
    precision_at_k,
    rmse,
    top_k,
)


def _labels(rng, num_data, num_labels, density):
    Y = sp.random(num_data, num_labels, density=density, format="csr", random_state=rng.integers(1 << 31))
    Y.data[:] = 1.0
    Y = sp.csr_matrix(sp.diags((np.arange(num_data) % 7 != 3).astype(float)) @ Y)  # some rows without labels
    Y.eliminate_zeros()
    return Y


def _brute_precision_ndcg(Y_dense, scores, k):
    precisions, ndcgs = [], []
    for y, s in zip(Y_dense, scores):
        ranking = np.argsort(-s, kind="stable")[:k]
        gains = y[ranking] > 0
        precisions.append(gains.sum() / k)
        dcg = sum(g / np.log2(r + 2) for r, g in enumerate(gains))
        idcg = sum(1 / np.log2(r + 2) for r in range(min(k, int((y > 0).sum()))))
        ndcgs.append(dcg / idcg if idcg > 0 else 0.0)
    return np.mean(precisions), np.mean(ndcgs)


def test_top_k_matches_full_sort(rng):
    scores = rng.normal(size=(37, 23))
    for k in (1, 5, 23):
        for chunk_size in (None, 1, 4):
            np.testing.assert_array_equal(top_k(scores, k, chunk_size), np.argsort(-scores, axis=1)[:, :k])
    tied = np.array([[1.0, 3.0, 3.0, 0.0, 3.0]])
    np.testing.assert_array_equal(top_k(tied, 3), [[1, 2, 4]])  # ties: lower index first


@pytest.mark.parametrize("k", [1, 3, 5])
def test_precision_and_ndcg_match_brute_force(rng, k):
    Y = _labels(rng, 60, 40, 0.08)
    scores = rng.normal(size=(60, 40))
    brute_p, brute_n = _brute_precision_ndcg(Y.toarray(), scores, k)
    assert precision_at_k(Y, scores, k) == pytest.approx(brute_p, abs=1e-14)
    assert ndcg_at_k(Y, scores, k) == pytest.approx(brute_n, abs=1e-14)
    indices = top_k(scores, 10)  # [N, 10], best first
    assert precision_at_k(Y, indices, k) == pytest.approx(brute_p, abs=1e-14)
    assert ndcg_at_k(Y, indices, k) == pytest.approx(brute_n, abs=1e-14)
    # any sparse format and a dense 0/1 array are accepted for y_true
    assert precision_at_k(Y.tocoo(), scores, k) == precision_at_k(Y.toarray(), scores, k) == precision_at_k(Y, scores, k)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_precision_and_ndcg_match_napkinxc(rng, k):
    Y = _labels(rng, 200, 80, 0.05)
    scores = rng.normal(size=(200, 80))
    assert precision_at_k(Y, scores, k) == pytest.approx(napkin_precision_at_k(Y, scores, k=k)[k - 1], abs=1e-12)
    assert ndcg_at_k(Y, scores, k) == pytest.approx(napkin_ndcg_at_k(Y, scores, k=k)[k - 1], abs=1e-12)


def test_large_label_space_from_top_k_indices(rng):
    """K = 1e5 labels: only sparse Y and [N, k] indices are ever formed."""
    num_data, num_labels, k = 300, 100_000, 5
    rows = np.repeat(np.arange(num_data), 4)
    cols = rng.integers(0, num_labels, size=rows.size)
    Y = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(num_data, num_labels))
    Y.data[:] = 1.0
    # predictions: a mix of true labels and random ones
    predicted = rng.integers(0, num_labels, size=(num_data, k))
    true_first = Y.indices[Y.indptr[:-1]]
    predicted[::2, 0] = true_first[::2]
    predicted[1::3, 2] = true_first[1::3]
    rankings = [list(map(int, p)) for p in predicted]
    expected_p = napkin_precision_at_k(Y, rankings, k=k)
    expected_n = napkin_ndcg_at_k(Y, rankings, k=k)
    for j in range(1, k + 1):
        assert precision_at_k(Y, predicted, j) == pytest.approx(expected_p[j - 1], abs=1e-12)
        assert ndcg_at_k(Y, predicted, j) == pytest.approx(expected_n[j - 1], abs=1e-12)
    assert precision_at_k(Y, predicted, 1) > 0.4


def test_multilabel_metric_bad_input(rng):
    Y = _labels(rng, 10, 6, 0.3)
    scores = rng.normal(size=(10, 6))
    with pytest.raises(ValueError, match="k must be >= 1"):
        precision_at_k(Y, scores, 0)
    with pytest.raises(TypeError, match="k must be an integer"):
        ndcg_at_k(Y, scores, 1.5)
    with pytest.raises(ValueError, match="k=7 exceeds the number of labels K=6"):
        precision_at_k(Y, scores, 7)
    with pytest.raises(ValueError, match="N=10 rows"):
        precision_at_k(Y, scores[:9], 1)
    with pytest.raises(ValueError, match=r"must have shape \[N, K\]"):
        precision_at_k(Y, scores[:, :5], 1)
    bad = scores.copy()
    bad[2, 3] = np.nan
    with pytest.raises(ValueError, match=r"y_pred contains NaN or inf \(first at index \(2, 3\)\)"):
        ndcg_at_k(Y, bad, 1)
    with pytest.raises(ValueError, match="label index 6 in y_pred is out of range for K=6"):
        precision_at_k(Y, np.full((10, 2), 6), 1)
    with pytest.raises(ValueError, match="fewer than k=3"):
        precision_at_k(Y, np.zeros((10, 2), dtype=int), 3)
    with pytest.raises(ValueError, match="scores must be a 2-D array"):
        top_k(np.zeros(5), 1)


def test_accuracy_nlpp_rmse_against_brute_force(rng):
    logits = rng.normal(size=(50, 4))
    probabilities = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    y = rng.integers(0, 4, size=50)
    assert accuracy(y, probabilities) == np.mean([np.argmax(p) == t for p, t in zip(probabilities, y)])
    assert accuracy(y, probabilities.argmax(1)) == accuracy(y, probabilities)
    brute_nlpp = -np.mean([np.log(p[t]) for p, t in zip(probabilities, y)])
    assert mean_negative_log_predictive(y, probabilities) == pytest.approx(brute_nlpp, rel=1e-14)
    assert mean_negative_log_predictive(y, np.log(probabilities), log=True) == pytest.approx(brute_nlpp, rel=1e-14)
    mean, variance, target = rng.normal(size=20), rng.uniform(0.1, 2, size=20), rng.normal(size=20)
    expected = -np.mean(scipy.stats.norm.logpdf(target, mean, np.sqrt(variance)))
    assert gaussian_negative_log_predictive(target, mean, variance) == pytest.approx(expected, rel=1e-13)
    assert rmse(target, mean) == pytest.approx(np.sqrt(np.mean((target - mean) ** 2)), rel=1e-15)


def test_dense_metric_bad_input(rng):
    probabilities = np.full((5, 3), 1 / 3)
    with pytest.raises(ValueError, match="y_true has 4 entries but the predictions have 5 rows"):
        accuracy(np.zeros(4, dtype=int), probabilities)
    with pytest.raises(ValueError, match=r"class index 3 in y_true out of range \[0, 3\)"):
        mean_negative_log_predictive(np.array([0, 1, 2, 3, 0]), probabilities)
    with pytest.raises(ValueError, match="sum to 1"):
        mean_negative_log_predictive(np.zeros(5, dtype=int), probabilities * 2)
    with pytest.raises(ValueError, match="probabilities contain NaN"):
        mean_negative_log_predictive(np.zeros(5, dtype=int), np.full((5, 3), np.nan))
    with pytest.raises(ValueError, match="same shape"):
        rmse(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="y_pred contains NaN"):
        rmse(np.zeros(3), np.array([0.0, np.nan, 1.0]))
    with pytest.raises(ValueError, match="variance must be positive"):
        gaussian_negative_log_predictive(np.zeros(2), np.zeros(2), np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="empty"):
        rmse(np.zeros(0), np.zeros(0))


@pytest.mark.parametrize("metric", [precision_at_k, ndcg_at_k])
@pytest.mark.parametrize("sparse", [False, True])
def test_label_metrics_reject_plus_minus_one_encodings(metric, sparse):
    """A ±1 label matrix would make every label relevant (non-zero = relevant): it is refused, naming y_true."""
    signed = np.array([[1, -1, -1], [-1, 1, -1]])
    scores = np.array([[0.9, 0.1, 0.0], [0.2, 0.7, 0.1]])
    with pytest.raises(ValueError, match=r"y_true holds negative entries \(-1 at row 0, column 1\).*\(y_true > 0\)"):
        metric(sp.csr_matrix(signed) if sparse else signed, scores, k=1)
    assert metric(signed > 0, scores, k=1) == 1.0
