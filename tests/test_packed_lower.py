"""Packed lower factors (GPflow's ``triangular()`` storage): the fill and the whitened KL with their written-out
gradients against tfp's ``fill_triangular`` and GPflow's ``gauss_kl`` differentiated by autodiff, and GPLVF's KL
term against GPflow's ``prior_kl``."""

import json

import gpflow
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

from gpflow_ext.models import GPLVF
from gpflow_ext.variational.packed_lower import (
    fill_lower,
    lower_factors,
    packed_layout,
    whitened_gauss_kl,
    whitened_gauss_kl_packed,
)


@pytest.mark.parametrize("num_inducing", [1, 2, 3, 4, 7, 20, 31, 64])
def test_layout_is_tfps_packing(num_inducing):
    size = num_inducing * (num_inducing + 1) // 2
    filled = tfp.math.fill_triangular(np.arange(1.0, size + 1)).numpy().reshape(-1)  # [M*M]: packed index + 1
    flat_position, diagonal = packed_layout(num_inducing)
    np.testing.assert_array_equal(filled[flat_position], np.arange(1.0, size + 1))
    assert np.count_nonzero(filled) == size
    np.testing.assert_array_equal(np.diag(filled.reshape(num_inducing, num_inducing)), diagonal + 1.0)
    entries, stride = np.arange(size), num_inducing + 1  # the two progressions the KL slices
    np.testing.assert_array_equal(np.sort(diagonal), np.sort(np.r_[entries[::stride], entries[num_inducing::stride]]))


@pytest.mark.parametrize("shape", [(6,), (4, 10), (2, 3, 21), (5, 210)])
def test_fill_and_its_gradient_equal_tfps_by_autodiff(shape):
    rng = np.random.default_rng(len(shape))
    packed = tf.constant(rng.standard_normal(shape))
    num_inducing = int(round((np.sqrt(8 * shape[-1] + 1) - 1) / 2))
    upstream = tf.constant(rng.standard_normal(shape[:-1] + (num_inducing, num_inducing)))  # upper entries too

    def value_and_gradient(fill):
        with tf.GradientTape() as tape:
            tape.watch(packed)
            lower = fill(packed)
            objective = tf.reduce_sum(upstream * lower)
        return lower, tape.gradient(objective, packed)

    ours, expected = value_and_gradient(fill_lower), value_and_gradient(tfp.math.fill_triangular)
    np.testing.assert_array_equal(ours[0].numpy(), expected[0].numpy())
    np.testing.assert_allclose(ours[1].numpy(), expected[1].numpy(), rtol=0, atol=1e-14)
    # the gradient can fail: upstream's upper triangle must not reach the packed entries
    assert not np.allclose(ours[1].numpy(), value_and_gradient(lambda x: tfp.math.fill_triangular(x, upper=True))[1])


@pytest.mark.parametrize("num_inducing, num_outputs", [(1, 3), (4, 6), (20, 9)])
def test_whitened_kl_and_its_gradient_equal_gpflows_gauss_kl(num_inducing, num_outputs):
    rng = np.random.default_rng(num_inducing)
    size = num_inducing * (num_inducing + 1) // 2
    packed = tf.constant(rng.standard_normal((num_outputs, size)))  # negative diagonal entries included
    q_mu = tf.constant(rng.standard_normal((num_inducing, num_outputs)))

    def value_and_gradients(kl):
        with tf.GradientTape() as tape:
            tape.watch([q_mu, packed])
            value = kl(q_mu, packed)
        return [value.numpy()] + [g.numpy() for g in tape.gradient(value, [q_mu, packed])]

    ours = value_and_gradients(whitened_gauss_kl_packed)
    expected = value_and_gradients(lambda m, p: gpflow.kullback_leiblers.gauss_kl(m, tfp.math.fill_triangular(p)))
    for got, want in zip(ours, expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert np.all(np.isfinite(ours[2]))


def test_under_xla_the_kl_and_fill_equal_the_eager_values():
    rng = np.random.default_rng(3)
    packed = tf.constant(rng.standard_normal((5, 15)))
    q_mu = tf.constant(rng.standard_normal((5, 5)))

    def value_and_gradients(m, p):
        with tf.GradientTape() as tape:
            tape.watch([m, p])
            value = whitened_gauss_kl_packed(m, p) + tf.reduce_sum(tf.sin(fill_lower(p)))
        return [value, *tape.gradient(value, [m, p])]

    eager = value_and_gradients(q_mu, packed)
    compiled = tf.function(value_and_gradients, jit_compile=True)(q_mu, packed)
    for got, want in zip(compiled, eager):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_parameters_without_the_packed_transform_take_gpflows_path():
    rng = np.random.default_rng(4)
    lower = np.tril(rng.standard_normal((3, 4, 4))) + 2.0 * np.eye(4)
    q_mu = rng.standard_normal((4, 3))
    packed_parameter = gpflow.Parameter(lower, transform=gpflow.utilities.triangular())
    plain_parameter = gpflow.Parameter(lower)
    for parameter in (packed_parameter, plain_parameter, tf.constant(lower)):
        np.testing.assert_allclose(lower_factors(parameter).numpy(), lower, rtol=0, atol=1e-14)
        np.testing.assert_allclose(
            whitened_gauss_kl(q_mu, parameter).numpy(),
            gpflow.kullback_leiblers.gauss_kl(q_mu, lower).numpy(),
            rtol=1e-12,
        )


def test_a_length_that_is_no_triangle_is_refused():
    with pytest.raises(ValueError, match=r"M\(M\+1\)/2"):
        fill_lower(tf.zeros([3, 5], dtype=tf.float64))
    with pytest.raises(ValueError, match="q_mu has 4 rows"):
        whitened_gauss_kl_packed(tf.zeros([4, 3], dtype=tf.float64), tf.zeros([3, 6], dtype=tf.float64))


@pytest.mark.parametrize("whiten", [True, False])
def test_gplvfs_kl_term_and_its_gradient_equal_gpflows_prior_kl(whiten):
    rng = np.random.default_rng(5)
    Y = rng.standard_normal((30, 6))
    Y[rng.random(Y.shape) < 0.3] = np.nan
    model = GPLVF(Y, latent_dim=2, num_inducing=5, whiten=whiten, seed=0)
    model.q_mu.assign(rng.standard_normal((5, 6)))
    model.q_sqrt.assign(np.tril(rng.standard_normal((6, 5, 5))) + 3.0 * np.eye(5))
    variables = [model.q_mu.unconstrained_variable, model.q_sqrt.unconstrained_variable]

    def value_and_gradients(kl):
        with tf.GradientTape() as tape:
            value = kl()
        return [value.numpy()] + [g.numpy() for g in tape.gradient(value, variables)]

    expected = value_and_gradients(
        lambda: gpflow.kullback_leiblers.prior_kl(
            model.inducing_variable, model.kernel, model.q_mu, model.q_sqrt, whiten=whiten
        )
    )
    for got, want in zip(value_and_gradients(model.prior_kl), expected):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_side_by_side_benchmark_smoke_gives_gpflows_bound_and_gradients(run_python, data_dir, dataset_path, tmp_path):
    dataset_path("movielens-100k", "u.data.gz")
    output = tmp_path / "packed_lower.json"
    run_python("-m", "benchmarks.gplvf_packed_lower", "--smoke", "--batch-sizes", "16,64", "--data-dir", data_dir,
               "--output", output)
    rows = json.loads(output.read_text())["rows"]
    assert [row["batch size"] for row in rows] == [16, 64]
    for row in rows:
        assert row["bound relative difference"] < 1e-12 and row["gradient relative difference"] < 1e-10
        assert row["ours s/step"] > 0 and row["GPflow's forms / ours"] > 0
