"""MLGPF's negative labels and GPLVF's base noise under fit are functions of (seed, step, row index):
a batch split in two gives the same bound as the whole batch (what makes a data-parallel run equal a
single-process one), and the keyed negative-label estimate stays unbiased over steps."""
import numpy as np
import scipy.sparse as sp
import tensorflow as tf

from gpflow_ext.bijectors import planar_flow
from gpflow_ext.models import GPLVF
from gpflow_ext.randomness import minibatch_noise, row_normal
from gpflow_ext.recipes.mlgpf import build_mlgpf
from gpflow_ext.recipes.mlgpf_config import paper_config
from gpflow_ext.utilities import to_input_tensor


def _mlgpf(num_negative_samples, seed=0):
    X = sp.random(30, 20, density=0.3, format="csr", random_state=1)
    Y = sp.random(30, 15, density=0.2, format="csr", random_state=2)
    Y.data[:] = 1.0
    keep = np.ones(30)
    keep[3] = 0.0  # a row without positives
    Y = sp.csr_matrix(sp.diags(keep) @ Y)
    Y.eliminate_zeros()
    config = paper_config("s-linear", num_inducing=5, num_latent_gps=3, rank=6,
                          num_negative_samples=num_negative_samples, seed=seed)
    model = build_mlgpf(config, X, Y)
    return model, tuple(to_input_tensor(a) for a in model.prepare_data(X, Y))


def _rows(data, rows):
    X, Y = data
    return tuple(tf.sparse.reorder(tf.sparse.slice(part, [rows.start, 0], [rows.stop - rows.start, part.dense_shape[1]]))
                 for part in (X, Y))


def _combined(elbos, sizes, kl):
    """The whole-batch bound from the bounds of its parts: N/B Σ_i ℓ_i - KL."""
    return sum(b * (e + kl) for e, b in zip(elbos, sizes)) / sum(sizes) - kl


def test_mlgpf_negative_labels_do_not_depend_on_the_batch_split():
    model, data = _mlgpf(num_negative_samples=4)
    seed, rows = tf.constant([7, 11], tf.int64), tf.range(30, dtype=tf.int64) + 100
    kl = float(model.prior_kl())
    with minibatch_noise(seed, rows):
        whole = float(model.elbo(data))
    parts, sizes = [], []
    for piece in (slice(0, 13), slice(13, 30)):
        with minibatch_noise(seed, rows[piece]):
            parts.append(float(model.elbo(_rows(data, piece))))
        sizes.append(piece.stop - piece.start)
    np.testing.assert_allclose(_combined(parts, sizes, kl), whole, rtol=1e-13)
    with minibatch_noise(tf.constant([7, 12], tf.int64), rows):  # the next step draws other labels
        assert float(model.elbo(data)) != whole


def test_mlgpf_keyed_negative_sampling_is_unbiased_over_steps():
    exact_model, data = _mlgpf(num_negative_samples=None)
    model, _ = _mlgpf(num_negative_samples=3)
    exact = float(exact_model.elbo(data))
    rows = tf.range(30, dtype=tf.int64)

    @tf.function
    def at_step(step):
        with minibatch_noise(tf.stack([tf.constant(0, tf.int64), step]), rows):
            return model.elbo(data)

    draws = np.array([float(at_step(tf.constant(s, tf.int64))) for s in range(1500)])
    mean, se = draws.mean(), draws.std() / np.sqrt(draws.size)
    assert draws.std() > 0.1  # stochastic
    assert abs(mean - exact) < 4.5 * se, (mean, exact, se)
    assert se < 0.01 * abs(exact)  # the check has power


def _gplvf():
    rng = np.random.default_rng(3)
    Y = np.sin(rng.standard_normal((20, 2))) @ rng.standard_normal((2, 4)) + 0.1 * rng.standard_normal((20, 4))
    Y[rng.random(Y.shape) < 0.3] = np.nan
    Y[:, 0] = np.nan_to_num(Y[:, 0])
    model = GPLVF(Y, 2, 5, flow=planar_flow(2, 2, init_scale=0.5, seed=1), num_samples=3, seed=2)
    values, mask, index = model.training_data()
    return model, (tf.constant(values), tf.constant(mask), tf.constant(index))


def test_gplvf_base_noise_is_each_rows_keyed_normal_draws():
    model, data = _gplvf()
    seed, rows = tf.constant([5, 9], tf.int64), tf.constant(np.arange(20) * 3, tf.int64)
    with minibatch_noise(seed, rows):
        keyed = float(model.elbo(data))
    noise = tf.transpose(tf.reshape(row_normal(seed, rows, 3 * 2), [20, 3, 2]), [1, 0, 2])  # [S, B, Q]
    np.testing.assert_allclose(keyed, float(model.elbo_given_base_noise(data, noise)), rtol=1e-14)


def test_gplvf_base_noise_does_not_depend_on_the_batch_split():
    model, data = _gplvf()
    seed, rows = tf.constant([5, 9], tf.int64), tf.range(20, dtype=tf.int64)
    kl = float(model.prior_kl())
    with minibatch_noise(seed, rows):
        whole = float(model.elbo(data))
    parts, sizes = [], []
    for piece in (slice(0, 7), slice(7, 20)):
        with minibatch_noise(seed, rows[piece]):
            parts.append(float(model.elbo(tuple(part[piece] for part in data))))
        sizes.append(piece.stop - piece.start)
    np.testing.assert_allclose(_combined(parts, sizes, kl), whole, rtol=1e-12)
