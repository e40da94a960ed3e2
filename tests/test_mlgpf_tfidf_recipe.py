"""The ``tfidf`` MLGPF recipe: TF-IDF + L2 rows fitted on the training rows only, cosine-decayed Adam;
it builds and trains one epoch on a small slice."""
import os

import numpy as np
import pytest
import scipy.sparse as sp

from gpflow_ext.data.transforms import TfidfRows, l2_normalise_rows
from gpflow_ext.recipes import mlgpf as recipe
from gpflow_ext.recipes import mlgpf_config as configs


def _binary(rows, cols, seed):
    X = sp.random(rows, cols, density=0.3, format="csr", random_state=seed)
    X.data[:] = 1.0
    return X


def test_tfidf_rows_against_explicit_formula():
    """x_d · (log((1+N)/(1+df_d)) + 1) / ‖·‖ with df from the training rows only; dense == sparse."""
    train, test = _binary(30, 12, 0), _binary(7, 12, 1)
    transform = TfidfRows().fit(train)
    dense = train.toarray()
    df = (dense != 0).sum(axis=0)
    idf = np.log((1.0 + 30) / (1.0 + df)) + 1.0
    expected = test.toarray() * idf
    norms = np.linalg.norm(expected, axis=1, keepdims=True)
    expected = expected / np.where(norms == 0, 1.0, norms)
    np.testing.assert_allclose(transform(test).toarray(), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(transform(test.toarray()), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(TfidfRows().fit(train).idf, TfidfRows().fit(dense).idf)


def test_l2_rows_keep_zero_rows():
    X = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(l2_normalise_rows(X), [[0.6, 0.8], [0.0, 0.0]])
    np.testing.assert_allclose(l2_normalise_rows(sp.csr_matrix(X)).toarray(), [[0.6, 0.8], [0.0, 0.0]])


def test_tfidf_rows_bad_input():
    with pytest.raises(ValueError, match="not fitted"):
        TfidfRows()(np.ones((2, 3)))
    with pytest.raises(ValueError, match="3"):
        TfidfRows().fit(np.ones((2, 3)))(np.ones((2, 4)))


def test_learning_rate_decay_is_checked():
    with pytest.raises(ValueError, match="learning_rate_decay"):
        configs.paper_config("s-linear", learning_rate_decay="linear")


def test_tfidf_recipe_builds_and_trains_one_epoch_on_a_small_slice(baselines):
    """On 200 training rows (the first rows of Bibtex when $GPFLOW_EXT_DATA has it, else the generated problem)
    one epoch runs and ranks at least as well as the training label frequencies (within one test row: one epoch
    at this size learns the frequencies, not yet the words)."""
    config = configs.RECIPES["tfidf"]("s-linear", "bibtex", epochs=1, num_inducing=20, num_latent_gps=4, rank=30,
                                    batch_size=100, eval_every=1)
    assert config.learning_rate_decay == "cosine" and config.float32 and config.learning_rate == 0.1
    assert isinstance(config.input_transform, TfidfRows)
    try:
        (X, Y), (Xt, Yt) = recipe.load_xmc("bibtex", os.environ.get("GPFLOW_EXT_DATA"), max_rows=200)
    except Exception:
        (X, Y), (Xt, Yt) = recipe.synthetic_multilabel(num_rows=250)
    result = recipe.run_mlgpf(config, (X[:200], Y[:200]), (Xt[:50], Yt[:50]), progress=False)
    assert result["epochs_trained"] == 1 and result["config"]["input_transform"] == "tfidf_rows"
    for k in (1, 3, 5):
        frequency = baselines.frequency_p_at_k(Y[:200], Yt[:50], k)
        assert result[f"P@{k}"] >= frequency - 100.0 / (50 * k), (k, result[f"P@{k}"], frequency)
    assert np.isfinite(result["final_bound"])
