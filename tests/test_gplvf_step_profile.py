"""The GPLVF step profile (``python -m benchmarks.gplvf_step_profile --smoke``) traces the compiled step and puts its
ops in the parts of the bound by their name scopes; the scopes change no number."""
import json

import numpy as np
import scipy.sparse
import tensorflow as tf

from gpflow_ext.models import GPLVF


def test_step_profile_smoke_assigns_the_step_to_its_parts(run_python, data_dir, dataset_path, tmp_path):
    dataset_path("movielens-100k", "u.data.gz")
    output = tmp_path / "profile.json"
    run_python("-m", "benchmarks.gplvf_step_profile", "--smoke", "--data-dir", data_dir,
               "--trace-dir", tmp_path / "trace", "--output", output)
    results = json.loads(output.read_text())
    assert [run["batch_size"] for run in results["by_batch_size"]] == [16, 64]
    for run in results["by_batch_size"]:
        parts = dict(run["parts"])
        assert [part for part, _ in run["parts"]][:4] == run["per_output_parts"]  # stored in the step's order
        assert run["wall_seconds_per_step"] > 0 and np.isclose(sum(parts.values()), run["op_seconds_per_step"])
        for part in ("KL(q(u) ‖ p(u)) over the D outputs", "S_d = L_d L_dᵀ for the D outputs (variance term)",
                     "q_sqrt: its D lower triangles from the free vector", "optimiser update (Adam, every variable)",
                     "the batch's rows: q(x_n), samples, expected log-likelihood"):
            assert parts[part] > 0, part  # every scoped part found in the trace
        assert 0 < run["per_output_share"] < 1
        assert parts["the rest"] < 0.5 * run["op_seconds_per_step"]  # the scopes hold most of the step


def test_name_scopes_leave_the_bound_and_its_gradient_as_they_were():
    """The bound inside the scopes equals its parts added up by hand (row terms, KL(q(u) ‖ p(u))), gradients too."""
    rng = np.random.default_rng(0)
    Y = scipy.sparse.random(30, 12, density=0.4, random_state=1, format="csr", data_rvs=lambda n: rng.integers(1, 6, n))
    model = GPLVF(Y, 2, 5, num_samples=1, seed=0)
    data = tuple(tf.constant(a[:10]) for a in model.training_data())
    noise = tf.constant(rng.standard_normal((1, 10, 2)))
    with tf.GradientTape(persistent=True) as tape:
        bound = model.elbo_given_base_noise(data, noise)
        x_mean, x_var = model.local_parameters(*data)
        expected_log_lik, kl_x = model.row_terms(data[0], data[1], x_mean, x_var, noise)
        by_hand = 30 / 10 * tf.reduce_sum(expected_log_lik - kl_x) - model.prior_kl()
    np.testing.assert_allclose(bound.numpy(), by_hand.numpy(), rtol=1e-12)
    for g, g_hand in zip(tape.gradient(bound, model.trainable_variables), tape.gradient(by_hand, model.trainable_variables)):
        np.testing.assert_allclose(tf.convert_to_tensor(g).numpy(), tf.convert_to_tensor(g_hand).numpy(), rtol=1e-10,
                                   atol=1e-12)
