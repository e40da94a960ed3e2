"""GroupedOptimizer: each group's optimizer updates only its own variables, exactly; bad groups fail."""
import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ext.training import GroupedOptimizer, adam_by_group, fit


def test_each_group_takes_its_own_sgd_step():
    a = tf.Variable([1.0, -2.0], dtype=tf.float64)
    b = tf.Variable(3.0, dtype=tf.float64)
    c = tf.Variable([[0.5]], dtype=tf.float64)
    optimizer = GroupedOptimizer([(tf_keras.optimizers.SGD(0.25), [a, c]), (tf_keras.optimizers.SGD(0.5), [b])])
    optimizer.build([a, b, c])
    grads = [tf.constant([4.0, 8.0], tf.float64), tf.constant(2.0, tf.float64), tf.constant([[-4.0]], tf.float64)]
    optimizer.apply_gradients(zip(grads, [a, b, c]))
    np.testing.assert_array_equal(a.numpy(), [0.0, -4.0])
    np.testing.assert_array_equal(b.numpy(), 2.0)
    np.testing.assert_array_equal(c.numpy(), [[1.5]])
    assert [int(o.iterations.numpy()) for o in optimizer.optimizers] == [1, 1]


def test_fit_with_one_group_equals_fit_with_its_optimizer(rng):
    X = rng.normal(size=(30, 2))
    Y = np.sin(X[:, :1]) + 0.1 * rng.normal(size=(30, 1))

    def model():
        return gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(),
                                  inducing_variable=X[:5].copy(), num_data=30)

    plain, grouped = model(), model()
    fit(plain, (X, Y), epochs=3, batch_size=10, optimizer=tf_keras.optimizers.Adam(0.01), progress=False)
    fit(grouped, (X, Y), epochs=3, batch_size=10, progress=False,
        optimizer=GroupedOptimizer([(tf_keras.optimizers.Adam(0.01), grouped.trainable_variables)]))
    for p, g in zip(plain.trainable_variables, grouped.trainable_variables):
        np.testing.assert_allclose(g.numpy(), p.numpy(), rtol=1e-12, atol=1e-14)


def test_fit_freezes_nothing_and_resumes_from_a_checkpoint(rng, tmp_path):
    X = rng.normal(size=(20, 1))
    Y = X + 0.1 * rng.normal(size=(20, 1))
    m = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(),
                           inducing_variable=X[:4].copy(), num_data=20)
    kernel_vars = list(m.kernel.trainable_variables)
    rest = [v for v in m.trainable_variables if all(v is not k for k in kernel_vars)]

    def optimizer():
        return GroupedOptimizer([(tf_keras.optimizers.Adam(0.05), kernel_vars), (tf_keras.optimizers.Adam(0.01), rest)])

    opt = optimizer()
    fit(m, (X, Y), epochs=2, batch_size=10, optimizer=opt, checkpoint_dir=tmp_path, progress=False)
    assert [int(o.iterations.numpy()) for o in opt.optimizers] == [4, 4]
    history = fit(m, (X, Y), epochs=3, batch_size=10, optimizer=optimizer(), checkpoint_dir=tmp_path, progress=False)
    assert history.trained_epochs == [3]  # resumed after epoch 2 with both groups' Adam slots restored


def test_bad_groups_are_named():
    a = tf.Variable(1.0, dtype=tf.float64)
    b = tf.Variable(2.0, dtype=tf.float64)
    with pytest.raises(ValueError, match="at least one"):
        GroupedOptimizer([])
    with pytest.raises(ValueError, match=r"already in groups\[0\]"):
        GroupedOptimizer([(tf_keras.optimizers.SGD(0.1), [a]), (tf_keras.optimizers.SGD(0.1), [a, b])])
    with pytest.raises(TypeError, match=r"groups\[0\]: optimizer must have apply_gradients"):
        GroupedOptimizer([("adam", [a])])
    with pytest.raises(TypeError, match=r"groups\[1\] must be an \(optimizer, variables\) pair"):
        GroupedOptimizer([(tf_keras.optimizers.SGD(0.1), [a]), tf_keras.optimizers.SGD(0.1)])
    optimizer = GroupedOptimizer([(tf_keras.optimizers.SGD(0.1), [a])])
    with pytest.raises(ValueError, match="is in no group"):
        optimizer.build([a, b])


def test_adam_by_group_gives_named_groups_their_rates_and_names_bad_ones():
    a = tf.Variable([1.0, -2.0], dtype=tf.float64)
    b = tf.Variable(3.0, dtype=tf.float64)
    c = tf.Variable(0.5, dtype=tf.float64)
    schedule = tf_keras.optimizers.schedules.ExponentialDecay(0.3, 10, 0.5)
    optimizer = adam_by_group({"first": [a], "second": [b], "empty": [], "third": [c]}, {"second": schedule}, 0.1)
    assert len(optimizer.optimizers) == 3  # the empty group gets no Adam
    optimizer.build([a, b, c])
    optimizer.apply_gradients(zip([tf.constant([2.0, -5.0], tf.float64), tf.constant(7.0, tf.float64),
                                   tf.constant(-1.0, tf.float64)], [a, b, c]))
    # Adam's first step moves each coordinate by its rate against the gradient's sign (up to epsilon)
    np.testing.assert_allclose(a.numpy(), [0.9, -1.9], atol=1e-5)
    np.testing.assert_allclose(b.numpy(), 3.0 - 0.3, atol=1e-5)
    np.testing.assert_allclose(c.numpy(), 0.6, atol=1e-5)
    with pytest.raises(ValueError, match=r"names groups \['flow'\] that are not among the groups"):
        adam_by_group({"local": [a]}, {"flow": 1e-3}, 0.01)
    with pytest.raises(ValueError, match=r"learning_rates\['local'\] must be a positive finite number"):
        adam_by_group({"local": [a]}, {"local": -1.0}, 0.01)
    with pytest.raises(ValueError, match="default_learning_rate must be a positive finite number"):
        adam_by_group({"local": [a]}, {}, float("nan"))
    with pytest.raises(ValueError, match="groups must be a non-empty mapping"):
        adam_by_group({}, {}, 0.01)
    with pytest.raises(ValueError, match="already in groups"):
        adam_by_group({"x": [a], "y": [a]}, {}, 0.01)
