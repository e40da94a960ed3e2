"""Per-row random numbers (gpflow_ext.randomness): TF's Philox stream of each row, bit for bit; a row's
draws do not depend on the other rows of its batch; uniform and normal in distribution."""
import numpy as np
import pytest
import scipy.stats
import tensorflow as tf

from gpflow_ext import randomness

SEED = tf.constant([3, 17], tf.int64)


def _tf_stream(seed, row, num):
    """Row ``row``'s numbers from tf.random's own stateless kernel: key K(seed), counter (0, row)."""
    k = randomness.philox_key(seed).numpy()
    key = np.uint64(int(k[0]) | (int(k[1]) << 32))
    return tf.raw_ops.StatelessRandomUniformV2(
        shape=[num], key=tf.constant([key], tf.uint64), counter=tf.constant([0, row], tf.uint64), alg=1,
        dtype=tf.float64).numpy()


def test_each_row_is_tf_philox_stream_bit_for_bit():
    rows = [0, 1, 5, 123456, 2**33 + 7]
    for num in (1, 2, 7):
        u = randomness.row_uniform(SEED, tf.constant(rows, tf.int64), num).numpy()  # [B, num]
        for i, row in enumerate(rows):
            np.testing.assert_array_equal(u[i], _tf_stream(SEED, row, num))


def test_a_rows_draws_do_not_depend_on_its_batch():
    rows = tf.constant([9, 4, 100, 4, 0], tf.int64)
    together = randomness.row_normal(SEED, rows, 6).numpy()
    for i in range(5):
        alone = randomness.row_normal(SEED, rows[i : i + 1], 6).numpy()
        np.testing.assert_array_equal(alone[0], together[i])
    np.testing.assert_array_equal(together[1], together[3])  # the same row, the same numbers
    assert not np.array_equal(together[0], together[1])
    other_step = randomness.row_normal(tf.constant([3, 18], tf.int64), rows, 6).numpy()
    assert not np.any(other_step == together)
    # a longer stream extends the shorter one
    np.testing.assert_array_equal(randomness.row_uniform(SEED, rows, 9).numpy()[:, :6],
                                  randomness.row_uniform(SEED, rows, 6).numpy())


def test_uniform_and_normal_in_distribution():
    rows = tf.range(4000, dtype=tf.int64)
    u = randomness.row_uniform(SEED, rows, 5).numpy()
    assert u.min() >= 0.0 and u.max() < 1.0
    assert scipy.stats.kstest(u.ravel(), "uniform").pvalue > 1e-3
    z = randomness.row_normal(SEED, rows, 5).numpy()
    assert scipy.stats.kstest(z.ravel(), "norm").pvalue > 1e-3
    assert abs(np.corrcoef(z[:, 0], z[:, 1])[0, 1]) < 0.06  # within a row
    assert abs(np.corrcoef(z[:-1, 0], z[1:, 0])[0, 1]) < 0.06  # neighbouring rows


def test_float32_draws_are_the_leading_bits_and_compute_in_float32():
    rows = tf.range(50, dtype=tf.int64)
    u64 = randomness.row_uniform(SEED, rows, 4).numpy()
    u32 = randomness.row_uniform(SEED, rows, 4, tf.float32).numpy()
    assert u32.dtype == np.float32
    np.testing.assert_array_equal(u32.astype(np.float64), np.floor(u64 * 2.0**23) / 2.0**23)
    z32 = randomness.row_normal(SEED, rows, 4, tf.float32).numpy()
    np.testing.assert_allclose(z32, randomness.row_normal(SEED, rows, 4).numpy(), atol=1e-3)
    graph = tf.function(lambda s, r: randomness.row_normal(s, r, 4, tf.float32)).get_concrete_function(
        tf.TensorSpec([2], tf.int64), tf.TensorSpec([None], tf.int64)).graph
    assert not [op.name for op in graph.get_operations() if any(t.dtype == tf.float64 for t in op.outputs)]
    with pytest.raises(ValueError, match="dtype must be a floating type"):
        randomness.row_uniform(SEED, rows, 4, tf.int32)


def test_the_announced_seed_and_rows_are_used_inside_the_block_only():
    generator = tf.random.Generator.from_seed(0)
    seed, rows = tf.constant([1, 2], tf.int64), tf.constant([7, 3], tf.int64)
    with randomness.minibatch_noise(seed, rows):
        got_seed, got_rows = randomness.noise_seed_and_rows(generator, 2)
    np.testing.assert_array_equal(got_seed, [1, 2])
    np.testing.assert_array_equal(got_rows, [7, 3])
    first, rows_a = randomness.noise_seed_and_rows(generator, 3)  # outside: fresh seeds, rows 0..B-1
    second, _ = randomness.noise_seed_and_rows(generator, 3)
    np.testing.assert_array_equal(rows_a, [0, 1, 2])
    assert not np.array_equal(first, second)


@pytest.mark.parametrize("compiled", [False, True])
def test_works_in_a_tf_function_with_a_dynamic_batch(compiled):
    def draw(seed, rows):
        return randomness.row_uniform(seed, rows, 3)

    fn = tf.function(draw, input_signature=[tf.TensorSpec([2], tf.int64), tf.TensorSpec([None], tf.int64)]) \
        if compiled else draw
    out = fn(SEED, tf.constant([4, 5], tf.int64)).numpy()
    np.testing.assert_array_equal(out, randomness.row_uniform(SEED, tf.constant([4, 5], tf.int64), 3).numpy())
