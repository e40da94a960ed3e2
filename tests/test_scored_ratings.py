"""Scored ratings as a model and as a mixture of models: GPLVF trained on Yᵀ (items as rows) seen per user, and the
equally weighted predictive mixture of the two ways round (protocol (b) ``rows``), against brute-force twins."""

import json
import re

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp

from gpflow_ext.models import GPLVF
from gpflow_ext.recipes.gplvf import GPLVFTraining
from gpflow_ext.recipes.gplvf_likelihoods import rating_log_probabilities
from gpflow_ext.recipes.movielens import ProtocolB, run_protocol_b, scored_at
from gpflow_ext.recipes.movielens_data import centre
from gpflow_ext.recipes.scored_ratings import ScoredRatings, mixture

RATINGS = np.arange(1.0, 6.0)


def _ratings(seed=0, shape=(14, 9), observed=0.55):
    rng = np.random.default_rng(seed)
    values = rng.integers(1, 6, shape).astype(float)
    return sp.csr_matrix(np.where(rng.random(shape) < observed, values, 0.0))


def _split(ratings, seed=1):
    """(train, scored): about a third of the entries scored, every row keeping at least one to train on."""
    rng = np.random.default_rng(seed)
    m = ratings.tocoo()
    held = rng.random(m.nnz) < 0.35
    first = np.r_[True, np.diff(m.row) != 0]  # each row's first entry always trains
    held &= ~first

    def part(keep):
        return sp.csr_matrix((m.data[keep], (m.row[keep], m.col[keep])), shape=m.shape)

    return part(~held), part(held)


def _trained_model(matrix, seed=0):
    model = GPLVF(matrix, 2, 4, seed=seed)
    rng = np.random.default_rng(seed)
    model.q_mu.assign(0.7 * rng.standard_normal(model.q_mu.shape))
    return model


def _random_scored(seed, shape=(6, 5), observed=0.6):
    rng = np.random.default_rng(seed)
    target = _ratings(seed, shape, observed).tocoo()
    probabilities = rng.dirichlet(np.ones(5), target.nnz)
    return ScoredRatings(
        shape=shape,
        rows=target.row,
        cols=target.col,
        ratings=target.data,
        rating_values=RATINGS,
        mean=rng.uniform(0.5, 5.5, target.nnz),
        probabilities=probabilities,
        row_log_joint=rng.normal(-3.0, 1.0, shape[0]) * (np.bincount(target.row, minlength=shape[0]) > 0),
    )


def test_transposed_model_is_indexed_per_user_and_its_joint_is_the_product_of_marginals():
    """A GPLVF trained on Yᵀ, scored and transposed: each (user, item) entry carries the prediction the model made
    for (item, user), and a user's joint log-probability is the sum of the entries' log marginals, checked against a
    Monte Carlo twin that draws each item's latent point independently."""
    train, scored = _split(_ratings())
    model_train, _, biases = centre(sp.csr_matrix(train.T), None, "bias")
    model = _trained_model(model_train)
    x_mean, x_var = model.training_latents()
    per_item, _ = scored_at(model, x_mean, x_var, sp.csr_matrix(scored.T), 6, seed=3, biases=biases)
    per_user = per_item.transposed()
    assert per_user.shape == scored.shape and per_user.rows.size == scored.nnz
    dense = scored.toarray()
    for t in range(per_user.rows.size):
        u, i = per_user.rows[t], per_user.cols[t]
        assert per_user.ratings[t] == dense[u, i]
        (s,) = np.flatnonzero((per_item.rows == i) & (per_item.cols == u))
        assert per_user.mean[t] == per_item.mean[s]
        np.testing.assert_array_equal(per_user.probabilities[t], per_item.probabilities[s])
    classes = (per_user.ratings - 1).astype(int)
    for u in range(scored.shape[0]):
        mine = per_user.rows == u
        expected = np.sum(np.log(per_user.probabilities[mine, classes[mine]]))
        assert per_user.row_log_joint[u] == pytest.approx(expected, rel=1e-12, abs=1e-12)
    # Monte Carlo twin of each user's joint: the item model's draws of the items' latent points are independent,
    # so the mean over draws of the product over a user's items estimates the product of the marginals
    offsets = biases[0] + biases[1][per_item.rows] + biases[2][per_item.cols]
    item_target = sp.csr_matrix(scored.T).sorted_indices()
    log_p = rating_log_probabilities(model, x_mean, x_var, item_target, RATINGS, offsets, num_samples=4000, seed=5)
    picked = log_p[:, np.arange(per_item.rows.size), (per_item.ratings - 1).astype(int)]  # [J, T]
    for u in range(scored.shape[0]):
        entries = per_item.cols == u
        if not entries.any():
            continue
        monte_carlo = logsumexp(picked[:, entries].sum(axis=1)) - np.log(4000)
        product = np.sum(logsumexp(picked[:, entries], axis=0) - np.log(4000))
        assert monte_carlo == pytest.approx(product, abs=0.03)


def test_mixture_matches_a_brute_force_twin():
    """Mean, probabilities and each row's joint of a weighted mixture, entry by entry and row by row."""
    members = [_random_scored(0), _random_scored(0), _random_scored(0)]
    rng = np.random.default_rng(4)
    members = [
        ScoredRatings(
            **{
                **m.__dict__,
                "mean": rng.uniform(1, 5, m.mean.size),
                "probabilities": rng.dirichlet(np.ones(5), m.mean.size),
                "row_log_joint": np.where(m.row_log_joint != 0, rng.normal(-4, 2, m.shape[0]), 0.0),
            }
        )
        for m in members
    ]
    weights = (0.5, 0.3, 0.2)
    mixed = mixture(members, weights)
    for t in range(mixed.rows.size):
        assert mixed.mean[t] == pytest.approx(sum(w * m.mean[t] for w, m in zip(weights, members)), rel=1e-14)
        for k in range(5):
            expected = sum(w * m.probabilities[t, k] for w, m in zip(weights, members))
            assert mixed.probabilities[t, k] == pytest.approx(expected, rel=1e-14)
    for n in range(mixed.shape[0]):
        expected = np.log(sum(w * np.exp(m.row_log_joint[n]) for w, m in zip(weights, members)))
        assert mixed.row_log_joint[n] == pytest.approx(expected, rel=1e-12, abs=1e-14)
    equal = mixture(members[:2])
    np.testing.assert_allclose(equal.mean, 0.5 * (members[0].mean + members[1].mean), rtol=1e-15)
    single = mixture(members[:1])
    np.testing.assert_array_equal(single.row_log_joint, members[0].row_log_joint)


def test_metrics_are_the_rmse_log_probability_and_coverage_of_the_predictive():
    scored = _random_scored(2)
    got = scored.metrics()
    clipped = np.clip(scored.mean, 1, 5)
    assert got["rmse"] == pytest.approx(np.sqrt(np.mean((clipped - scored.ratings) ** 2)), rel=1e-14)
    assert got["rmse_unclipped"] == pytest.approx(np.sqrt(np.mean((scored.mean - scored.ratings) ** 2)), rel=1e-14)
    assert got["test_logprob_discrete"] == pytest.approx(scored.row_log_joint.sum() / scored.rows.size, rel=1e-14)
    assert got["num_test"] == scored.rows.size
    for level in (50, 90):
        inside = []
        for p, y in zip(scored.probabilities, scored.ratings):
            cdf = np.cumsum(p)
            low = np.flatnonzero(cdf >= (1 - level / 100) / 2)[0]
            high = np.flatnonzero(cdf >= (1 + level / 100) / 2 - 1e-12)[0]
            inside.append(low <= y - 1 <= high)
        assert got[f"coverage_{level}"] == pytest.approx(np.mean(inside))


def test_scored_at_gives_evaluate_at_metrics():
    from gpflow_ext.recipes.movielens import evaluate_at

    train, scored = _split(_ratings(3))
    model_train, _, biases = centre(train, None, "bias")
    model = _trained_model(model_train, seed=1)
    x_mean, x_var = model.training_latents()
    predictions, test_ll = scored_at(model, x_mean, x_var, scored, 5, seed=2, biases=biases)
    evaluated = evaluate_at(model, x_mean, x_var, scored, 5, seed=2, biases=biases)
    assert evaluated == {**predictions.metrics(), "test_loglik": test_ll}
    has = np.diff(scored.indptr) > 0  # rows with nothing scored are not predicted (nor drawn for)
    t = scored[has].tocoo()
    mean, _ = model.predict_y_marginal(x_mean[has], x_var[has], num_samples=5, seed=2)
    rows = np.flatnonzero(has)[t.row]
    expected = mean.numpy()[t.row, t.col] + biases[0] + biases[1][rows] + biases[2][t.col]
    np.testing.assert_allclose(predictions.mean, expected, rtol=1e-12)


def test_protocol_b_with_both_ways_round_scores_each_model_and_their_mixture():
    """``rows=("users", "items")``: the users' model's keys are those of ``rows=("users",)`` (same numbers), the
    items' model's carry ``items_``, and the mixture's RMSE is that of the two models' averaged means."""
    train, scored = _split(_ratings(5, shape=(16, 10)))
    train = sp.csr_matrix(train[:, :9])  # the last item has no training rating: predicted at q(x)'s base N(0, I)
    train = sp.hstack([train, sp.csr_matrix((16, 1))]).tocsr()
    training = GPLVFTraining(latent_dim=2, num_inducing=4, epochs=2, batch_size=8)
    both = ProtocolB(training=training, flows=(0,), predict_samples=4, rows=("users", "items"))
    users_only = ProtocolB(training=training, flows=(0,), predict_samples=4)
    row = run_protocol_b({"u1": (train, scored)}, both)["u1"]
    alone = run_protocol_b({"u1": (train, scored)}, users_only)["u1"]
    for key, value in alone.items():
        if "seconds" not in key:
            assert row[key] == value, key
    for key in ("rmse", "test_loglik", "test_logprob_discrete", "coverage_90", "final_elbo"):
        assert np.isfinite(row[f"items_gaussian_{key}"])
    users, _, _ = both.train_and_score(train, scored, "users", 0)
    items, _, _ = both.train_and_score(train, scored, "items", 0)
    assert row["items_gaussian_rmse"] == items.metrics()["rmse"]
    averaged = np.clip(0.5 * (users.mean + items.mean), 1, 5)
    assert row["mixture_gaussian_rmse"] == pytest.approx(np.sqrt(np.mean((averaged - users.ratings) ** 2)), rel=1e-12)
    assert (
        row["mixture_gaussian_test_logprob_discrete"]
        >= min(row["gaussian_test_logprob_discrete"], row["items_gaussian_test_logprob_discrete"])
        - np.log(2) * 16 / scored.nnz
    )


def test_unrated_item_is_predicted_at_the_base_gaussian():
    train, scored = _split(_ratings(6, shape=(12, 8)))
    train = sp.csr_matrix(train.multiply(np.arange(8) < 7))  # item 7: no training rating
    assert scored[:, 7].nnz > 0
    config = ProtocolB(training=GPLVFTraining(latent_dim=2, num_inducing=4, epochs=1), flows=(0,), predict_samples=3)
    predictions, _, _ = config.train_and_score(train, scored, "items", 0)
    assert np.all(np.isfinite(predictions.mean[predictions.cols == 7]))
    assert np.all(np.isfinite(predictions.row_log_joint))


def test_bad_rows_and_mixtures_are_named():
    training = GPLVFTraining(latent_dim=2, num_inducing=4, epochs=1)
    for rows in ("users", (), ("users", "movies"), ("items", "items")):
        with pytest.raises(ValueError, match="rows"):
            ProtocolB(training=training, rows=rows)
    a, b = _random_scored(0), _random_scored(1)
    with pytest.raises(ValueError, match="members\\[1\\]"):
        mixture([a, b])
    with pytest.raises(ValueError, match="at least one"):
        mixture([])
    for weights in ((0.5,), (0.7, 0.7), (1.5, -0.5), (float("nan"), 0.5)):
        with pytest.raises(ValueError, match="weights"):
            mixture([a, a], weights)
    with pytest.raises(ValueError, match="row-major"):
        ScoredRatings(**{**a.__dict__, "rows": a.rows[::-1].copy(), "cols": a.cols[::-1].copy()})
    with pytest.raises(ValueError, match="probabilities"):
        ScoredRatings(**{**a.__dict__, "probabilities": a.probabilities[:, :4]})


def test_saved_predictions_load_unchanged_and_bad_files_are_named(tmp_path):
    scored = _random_scored(3)
    path = scored.save(tmp_path / "deeper" / "u1_gaussian.npz")
    loaded = ScoredRatings.load(path)
    assert loaded.shape == scored.shape and isinstance(loaded.shape[0], int)
    for name in ("rows", "cols", "ratings", "rating_values", "mean", "probabilities", "row_log_joint"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(scored, name))
    assert loaded.metrics() == scored.metrics()
    with pytest.raises(FileNotFoundError, match="path must be a .npz file"):
        ScoredRatings.load(tmp_path / "absent.npz")
    np.savez(tmp_path / "other.npz", mean=scored.mean)
    with pytest.raises(ValueError, match="lacks"):
        ScoredRatings.load(tmp_path / "other.npz")


def test_mixture_across_runs_and_likelihoods_matches_the_brute_force_twin(tmp_path, run_python):
    """Two protocol (b) runs (a Gaussian and an ordinal likelihood, both ways round) save their predictions; the
    mixing script's members equal each run's own metrics, and its four-member mixture is the average of the four
    means and of the four joint probabilities of every user's scored ratings."""
    train, scored = _split(_ratings(8, shape=(16, 10)))
    folders = {}
    for likelihood, center in (("gaussian", "bias"), ("ordinal", "classes")):
        training = GPLVFTraining(latent_dim=2, num_inducing=4, epochs=2, batch_size=8, likelihood=likelihood)
        folders[likelihood] = tmp_path / likelihood
        config = ProtocolB(
            training=training,
            flows=(0,),
            predict_samples=4,
            rows=("users", "items"),
            center=center,
            predictions_dir=folders[likelihood],
        )
        folders[likelihood, "row"] = run_protocol_b({"u1": (train, scored)}, config)["u1"]
    members = [
        (f"{lik}_{rows}", lik, name)
        for lik in ("gaussian", "ordinal")
        for rows, name in (("users", "gaussian"), ("items", "items_gaussian"))
    ]
    argv = ["--splits", "u1", "--output", str(tmp_path / "mix.json")]
    for label, likelihood, name in members:
        argv += ["--member", label, str(folders[likelihood]), name]
    run_python("-m", "experiments.gplvf_mixture", *argv, timeout=300)
    row = json.loads((tmp_path / "mix.json").read_text())["b"]["u1"]
    for label, likelihood, name in members:
        for key in ("rmse", "test_logprob_discrete", "coverage_50", "coverage_90"):
            assert row[f"{label}_{key}"] == folders[likelihood, "row"][f"{name}_{key}"], (label, key)
    loaded = [ScoredRatings.load(folders[lik] / f"u1_{name}.npz") for _, lik, name in members]
    averaged = np.clip(np.mean([m.mean for m in loaded], axis=0), 1, 5)
    truth = loaded[0].ratings
    assert row["mixture_rmse"] == pytest.approx(np.sqrt(np.mean((averaged - truth) ** 2)), rel=1e-12)
    joint = logsumexp(np.stack([m.row_log_joint for m in loaded]), axis=0) - np.log(4)
    assert row["mixture_test_logprob_discrete"] == pytest.approx(joint.sum() / truth.size, rel=1e-12)
    assert row["num_scored"] == scored.nnz


def test_mixing_script_names_bad_members(tmp_path, run_python):
    _random_scored(0).save(tmp_path / "u1_a.npz")
    _random_scored(1).save(tmp_path / "u1_b.npz")
    cases = {
        "at least twice": ["--member", "a", str(tmp_path), "a"],
        "distinct": ["--member", "a", str(tmp_path), "a", "--member", "a", str(tmp_path), "b"],
        "no saved predictions": ["--member", "a", str(tmp_path), "a", "--member", "c", str(tmp_path), "c"],
        "members\\[1\\]": ["--member", "a", str(tmp_path), "a", "--member", "b", str(tmp_path), "b"],
    }
    for message, argv in cases.items():
        completed = run_python("-m", "experiments.gplvf_mixture", "--splits", "u1", *argv, check=False, timeout=300)
        assert completed.returncode == 2, (message, completed.stderr[-2000:])
        assert "--member" in completed.stderr and re.search(message, completed.stderr), (message, completed.stderr)
