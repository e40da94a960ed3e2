"""Planar flow: log-det against autodiff Jacobians, invertibility for any raw parameters."""
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

from gpflow_ext.bijectors import Planar, flow_forward_and_log_det, planar_flow
from gpflow_ext.bijectors.planar import constrained_u


def _autodiff_log_abs_det(fn, x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    jacobian = tape.batch_jacobian(y, x)  # [B, Q, Q]
    return np.linalg.slogdet(jacobian.numpy())


@pytest.mark.parametrize("latent_dim", [1, 2, 5])
def test_planar_log_det_matches_autodiff_jacobian(latent_dim):
    rng = np.random.default_rng(latent_dim)
    for scale in (0.1, 1.0, 5.0):
        layer = Planar(
            latent_dim,
            u=scale * rng.standard_normal(latent_dim),
            w=scale * rng.standard_normal(latent_dim),
            b=rng.standard_normal(),
        )
        x = rng.standard_normal((7, latent_dim))
        sign, log_abs_det = _autodiff_log_abs_det(layer.forward, x)
        np.testing.assert_allclose(layer.forward_log_det_jacobian(x, event_ndims=1).numpy(), log_abs_det, rtol=1e-10, atol=1e-10)
        assert np.all(sign > 0)  # orientation preserved: wᵀû > -1


def test_chain_log_det_matches_autodiff_and_tfp_chain():
    rng = np.random.default_rng(3)
    flow = planar_flow(6, 3, init_scale=1.0, seed=11)
    x = rng.standard_normal((9, 3))
    y, log_det = flow_forward_and_log_det(flow, tf.constant(x))
    np.testing.assert_allclose(y.numpy(), flow.forward(x).numpy(), rtol=1e-12)
    np.testing.assert_allclose(log_det.numpy(), flow.forward_log_det_jacobian(x, event_ndims=1).numpy(), rtol=1e-10)
    _, log_abs_det = _autodiff_log_abs_det(flow.forward, x)
    np.testing.assert_allclose(log_det.numpy(), log_abs_det, rtol=1e-9, atol=1e-10)


def test_chain_with_other_bijectors():
    rng = np.random.default_rng(4)
    flow = tfp.bijectors.Chain(
        [Planar(2, seed=1, init_scale=1.0), tfp.bijectors.Scale(np.array([2.0, 0.5])), Planar(2, seed=2, init_scale=1.0)]
    )
    x = rng.standard_normal((5, 2))
    y, log_det = flow_forward_and_log_det(flow, tf.constant(x))
    np.testing.assert_allclose(y.numpy(), flow.forward(x).numpy(), rtol=1e-12)
    _, log_abs_det = _autodiff_log_abs_det(flow.forward, x)
    np.testing.assert_allclose(log_det.numpy(), log_abs_det, rtol=1e-9, atol=1e-10)


def _invert_planar(layer, y):
    """Brute-force inverse: along w the map is a ↦ a + (wᵀû) tanh(a + b), monotone when wᵀû >= -1."""
    w = layer.w.numpy()
    u_hat = layer.u_hat.numpy()
    b = layer.b.numpy()
    wu = w @ u_hat
    target = y @ w  # [B]
    lo = target - abs(wu) - 1.0
    hi = target + abs(wu) + 1.0
    for _ in range(200):  # bisection on the scalar a = wᵀx
        mid = 0.5 * (lo + hi)
        too_big = mid + wu * np.tanh(mid + b) > target
        hi = np.where(too_big, mid, hi)
        lo = np.where(too_big, lo, mid)
    a = 0.5 * (lo + hi)
    return y - np.tanh(a + b)[:, None] * u_hat[None]


@pytest.mark.parametrize("identity_at_zero", [True, False])
def test_invertibility_for_any_raw_parameters(identity_at_zero):
    rng = np.random.default_rng(5)
    for trial in range(60):
        q = int(rng.integers(1, 6))
        scale = 10.0 ** rng.uniform(-3, 2)
        layer = Planar(q, u=scale * rng.standard_normal(q), w=scale * rng.standard_normal(q), b=scale * rng.standard_normal(),
                       identity_at_zero=identity_at_zero)
        w_dot_u_hat = float(layer.w.numpy() @ layer.u_hat.numpy())
        assert w_dot_u_hat >= -1.0, (trial, w_dot_u_hat)
        # adversarial raw u: pointing against w
        layer.u.assign(-50.0 * layer.w.numpy())
        assert float(layer.w.numpy() @ layer.u_hat.numpy()) >= -1.0
        x = 3.0 * rng.standard_normal((20, q))
        y = layer.forward(x).numpy()
        x_back = _invert_planar(layer, y)
        np.testing.assert_allclose(x_back, x, rtol=1e-6, atol=1e-6)
        assert np.all(np.isfinite(layer.forward_log_det_jacobian(x, event_ndims=1).numpy()))


def test_small_raw_parameters_give_the_identity_only_with_the_shifted_constraint():
    """m(0) = 0: a 50-layer flow at the default init_scale barely moves N(0, I) samples; Rezende and Mohamed's
    m(0) = log 2 - 1 makes each tiny layer a contraction by 1 + m(0) = log 2 along w (log-det log(log 2) each)."""
    x = tf.constant(np.random.default_rng(6).standard_normal((500, 10)))
    y, log_det = flow_forward_and_log_det(planar_flow(50, 10, seed=0), x)
    assert np.abs(log_det.numpy()).max() < 0.05 and np.abs((y - x).numpy()).max() < 0.05
    tiny = dict(init_scale=1e-4, seed=0)
    _, log_det_rezende = flow_forward_and_log_det(planar_flow(50, 10, identity_at_zero=False, **tiny), x)
    np.testing.assert_allclose(log_det_rezende.numpy(), 50 * np.log(np.log(2.0) + 1e-4), rtol=1e-3)
    _, log_det_shifted = flow_forward_and_log_det(planar_flow(50, 10, **tiny), x)
    np.testing.assert_allclose(log_det_shifted.numpy(), 50 * np.log(1.0 + 1e-4), rtol=1e-3)


def test_constrained_u_keeps_valid_u_direction_and_gradients_finite():
    u = tf.Variable([0.3, -0.2])
    w = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        u_hat = constrained_u(u, w)
        loss = tf.reduce_sum(u_hat**2)
    grads = tape.gradient(loss, [u, w])
    assert all(np.all(np.isfinite(g.numpy())) for g in grads)
    assert float(tf.reduce_sum(w * u_hat)) > -1.0


def test_planar_flow_parameters_are_trainable_and_bad_args():
    flow = planar_flow(4, 3)
    assert len(flow.trainable_variables) == 4 * 3
    assert flow.forward(np.zeros((2, 3))).shape == (2, 3)
    with pytest.raises(ValueError, match="num_layers"):
        planar_flow(-1, 2)
    with pytest.raises(ValueError, match="latent_dim"):
        planar_flow(2, 0)
    with pytest.raises(ValueError, match="u must have shape"):
        Planar(3, u=np.zeros(2))
    identity = planar_flow(0, 2)
    np.testing.assert_array_equal(flow_forward_and_log_det(identity, tf.ones((2, 2), tf.float64))[0].numpy(), np.ones((2, 2)))


def test_flow_local_nonlinearity_is_zero_for_affine_flows_and_matches_per_row_least_squares():
    from gpflow_ext.bijectors import flow_local_nonlinearity

    rng = np.random.default_rng(3)
    mean, var = rng.standard_normal((6, 3)), rng.uniform(0.05, 0.5, size=(6, 3))
    scale = np.array([0.5, 2.0, 1.0])
    identity = flow_local_nonlinearity(None, mean, var, scale=scale, num_samples=40)
    assert identity["mean_log_det"] == 0.0 and identity["median_displacement"] == 0.0
    assert identity["median_nonaffine"] < 1e-12
    np.testing.assert_allclose(identity["median_spread"], np.median(np.linalg.norm(np.sqrt(var) / scale, axis=1)), rtol=1e-14)

    s, c = np.array([0.5, 2.0, 3.0]), np.array([1.0, -1.0, 0.25])
    affine = tfp.bijectors.Chain([tfp.bijectors.Shift(c), tfp.bijectors.Scale(s)])  # x -> s x + c
    out = flow_local_nonlinearity(affine, mean, var, scale=scale, num_samples=40)
    np.testing.assert_allclose(out["mean_log_det"], np.sum(np.log(s)), rtol=1e-12)
    assert out["median_nonaffine"] < 1e-10 and out["median_displacement"] > 0.1

    layer = Planar(3, u=np.array([2.0, 0.0, 1.0]), w=np.array([3.0, -2.0, 0.5]), b=0.2)
    out = flow_local_nonlinearity(layer, mean, var, num_samples=40, seed=7)
    x0 = mean + np.sqrt(var) * np.random.default_rng(7).standard_normal((40, 6, 3))  # the same draws
    x = layer.forward(tf.constant(x0)).numpy()
    residuals = []
    for n in range(6):  # brute force: one least-squares problem per row
        design = np.c_[x0[:, n], np.ones(40)]
        coefficients, *_ = np.linalg.lstsq(design, x[:, n], rcond=None)
        residuals.append(np.sqrt(np.mean(np.sum((x[:, n] - design @ coefficients) ** 2, axis=1))))
    np.testing.assert_allclose(out["median_nonaffine"], np.median(residuals), rtol=1e-9)
    assert out["nonaffine_fraction"] > 0.01
    with pytest.raises(ValueError, match="x_var must have the shape of x_mean"):
        flow_local_nonlinearity(layer, mean, var[:, :2])
    with pytest.raises(ValueError, match=r"num_samples must be an integer > Q \+ 1 = 4"):
        flow_local_nonlinearity(layer, mean, var, num_samples=4)
    with pytest.raises(ValueError, match="x_var finite and > 0"):
        flow_local_nonlinearity(layer, mean, -var)
