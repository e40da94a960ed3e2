"""Random Fourier features appended to the rows (``WithRandomFeatures``, ``MLGPFConfig.random_features``; the
join itself, ``append_columns``, against ``scipy.sparse.hstack``): the
features against the squared-exponential kernel they estimate, fitted on training rows only, and the recipe's
transform in the run and in its inner cross-validation."""
import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from gpflow_ext.data.transforms import TfidfRows, WithRandomFeatures, append_columns, median_distance
from gpflow_ext.recipes import mlgpf_config as configs
from gpflow_ext.recipes.mlgpf import run_mlgpf
from gpflow_ext.recipes.mlgpf_select import _key, _tuning_key


def _rows(rows, cols, seed, density=0.3):
    return sp.random(rows, cols, density=density, format="csr", random_state=seed)


def test_features_estimate_the_squared_exponential_kernel():
    """φ(x)·φ(x') against exp(−‖x − x'‖²/(2ℓ²)) on the base rows: Monte Carlo error ~ 1/sqrt(F)."""
    train = _rows(200, 15, 0)
    transform = WithRandomFeatures(TfidfRows(), num_features=40000, seed=3).fit(train)
    test = _rows(6, 15, 1)
    joined = transform(test)
    base = TfidfRows().fit(train)(test).toarray()
    assert joined.shape == (6, 15 + 40000) and sp.issparse(joined)
    np.testing.assert_allclose(joined[:, :15].toarray(), base, rtol=1e-12, atol=1e-14)
    phi = joined[:, 15:].toarray()
    sq = ((base[:, None, :] - base[None, :, :]) ** 2).sum(-1)
    exact = np.exp(-sq / (2.0 * transform.fitted_lengthscale**2))
    np.testing.assert_allclose(phi @ phi.T, exact, atol=0.03)  # 4 sd of the estimate at F = 40000
    # each row's feature block has squared norm near 1, as the unit-norm TF-IDF block
    np.testing.assert_allclose((phi**2).sum(1), 1.0, atol=0.03)


def test_lengthscale_is_the_median_distance_of_the_training_rows_only():
    train, test = _rows(120, 10, 2), _rows(30, 10, 3)
    transform = WithRandomFeatures(None, num_features=5, seed=0).fit(train)
    dense = train.toarray()
    rows = np.random.default_rng(0).choice(120, size=120, replace=False)
    d = np.sqrt(((dense[rows][:, None] - dense[rows][None]) ** 2).sum(-1))
    assert transform.fitted_lengthscale == pytest.approx(np.median(d[np.triu_indices(120, 1)]), rel=1e-7)  # |x|²+|y|²-2xy rounding
    assert median_distance(dense, np.random.default_rng(0)) == pytest.approx(transform.fitted_lengthscale, rel=1e-12)
    before = transform(test).toarray()
    transform_again = WithRandomFeatures(None, num_features=5, seed=0).fit(train)
    np.testing.assert_array_equal(transform_again(test).toarray(), before)  # seeded
    np.testing.assert_allclose(transform(test.toarray()), before, rtol=1e-12)  # dense == sparse
    other = WithRandomFeatures(None, num_features=5, seed=1).fit(train)
    assert not np.allclose(other(test).toarray()[:, 10:], before[:, 10:])


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="num_features"):
        WithRandomFeatures(None, num_features=0)
    with pytest.raises(ValueError, match="lengthscale"):
        WithRandomFeatures(None, lengthscale=-1.0)
    with pytest.raises(TypeError, match="base"):
        WithRandomFeatures("tfidf")
    with pytest.raises(ValueError, match="not fitted"):
        WithRandomFeatures(None)(np.ones((2, 3)))
    fitted = WithRandomFeatures(None, num_features=4).fit(np.random.default_rng(0).random((5, 3)))
    with pytest.raises(ValueError, match="3"):
        fitted(np.ones((2, 4)))
    with pytest.raises(ValueError, match="random_features"):
        configs.paper_config("s-linear", random_features=-1)


def test_config_transform_and_its_keys():
    plain = configs.RECIPES["label-gps-auto"]("s-linear", "bibtex")
    assert plain.rows_transform() is plain.input_transform and plain.as_dict()["random_features"] == 0
    with_features = dataclasses.replace(plain, random_features=50, seed=4)
    transform = with_features.rows_transform()
    assert isinstance(transform, WithRandomFeatures) and isinstance(transform.base, TfidfRows)
    assert (transform.num_features, transform.seed, transform.__name__) == (50, 4, "tfidf_rows+rff50")
    # a config written before the field existed is the same computation as random_features = 0
    old = {k: v for k, v in plain.as_dict().items() if k != "random_features"}
    assert _key(old) == _key(plain.as_dict()) and _tuning_key(old) == _tuning_key(plain.as_dict())
    assert _key(with_features.as_dict()) != _key(dataclasses.replace(plain, seed=4).as_dict())
    assert _tuning_key(with_features.as_dict()) != _tuning_key(dataclasses.replace(plain, seed=4).as_dict())


def test_recipe_with_random_features_tunes_and_trains_on_the_joined_rows():
    """The inner cross-validation and the model see D + F columns; the test rows do not change the tuning."""
    rng = np.random.default_rng(0)
    X = _rows(160, 30, 4)
    weights = rng.standard_normal((30, 6))
    Y = sp.csr_matrix((X @ weights > 0.3).astype(float))
    config = configs.RECIPES["label-gps-auto"](
        "s-linear", "bibtex", rank=40, epochs=2, batch_size=80, random_features=20, float32=False
    )
    config = dataclasses.replace(config, kernel_variance_grid=(1.0, 8.0))
    first = run_mlgpf(config, (X[:120], Y[:120]), (X[120:], Y[120:]), progress=False)
    assert first["settings"]["rank"] == 40 and first["config"]["random_features"] == 20
    noise = _rows(40, 30, 9, density=0.5)
    second = run_mlgpf(config, (X[:120], Y[:120]), (noise, Y[120:]), progress=False)
    assert first["tuning"]["scores"] == second["tuning"]["scores"]
    assert np.isfinite(first["final_bound"]) and 0.0 <= first["P@1"] <= 100.0


@pytest.mark.parametrize("chunk_rows", [1, 3, 1000])
def test_append_columns_equals_scipy_hstack(chunk_rows):
    rng = np.random.default_rng(4)
    dense = rng.standard_normal((11, 7)) * (rng.random((11, 7)) < 0.3)
    dense[[2, 7]] = 0.0  # rows with no stored entry
    rows = sp.csr_matrix(dense.astype(np.float32))
    block = rng.standard_normal((11, 4))  # [N, F], float64
    joined = append_columns(rows, block, chunk_rows=chunk_rows)
    reference = sp.hstack([rows, sp.csr_matrix(block)], format="csr")
    assert sp.isspmatrix_csr(joined) and joined.shape == (11, 11) and joined.dtype == np.float64
    np.testing.assert_array_equal(joined.indptr, reference.indptr)
    np.testing.assert_array_equal(joined.indices, reference.indices)
    np.testing.assert_array_equal(joined.data, reference.data)
    assert joined.has_canonical_format
    np.testing.assert_array_equal(append_columns(dense, block), np.hstack([dense, block]))
    with pytest.raises(ValueError, match="block has 3 rows; the rows it is appended to have 11"):
        append_columns(rows, block[:3])
