"""Per-row random numbers for stochastic objectives: each row's draws are a function of a seed and the
row's index in the training data only, so they do not depend on which minibatch, replica or worker
evaluates the row.

Under :func:`gpflow_ext.training.fit` the seed of a step is ``(fit seed, global step)`` and the rows are
the minibatch's row indices in the training arrays; ``fit`` announces both with :func:`minibatch_noise`
around ``model.training_loss``, and a model asks for them with :func:`noise_seed_and_rows`. A data-parallel
run (``tf.distribute``) then draws, for every row, the numbers a single-process run draws for it.
Outside ``fit`` (a direct ``model.elbo(data)`` call) the seed comes fresh from the model's
``tf.random.Generator`` and the rows are numbered 0..B-1.

The numbers come from Philox-4x32-10, the generator behind ``tf.random.stateless_*``: row ``r``'s
stream under seed ``s`` is Philox with key ``K(s)`` at the counters ``(j, 0, r mod 2³², r div 2³²)``,
j = 0, 1, ..., i.e. ``tf.raw_ops.StatelessRandomUniformV2(shape, key=K(s), counter=[0, r])`` (the tests
check this bit for bit), evaluated for all rows of a batch at once (a stateless op per row would need a
sequential loop over the rows).
"""

import contextlib
import contextvars
from collections.abc import Iterator

import tensorflow as tf

__all__ = [
    "minibatch_noise",
    "noise_seed_and_rows",
    "announced_noise",
    "philox_key",
    "row_uniform",
    "row_normal",
    "shared_normal",
]

_MINIBATCH: contextvars.ContextVar = contextvars.ContextVar("gpflow_ext_minibatch_noise", default=None)

# Philox-4x32-10 constants (Salmon et al. 2011; tensorflow/core/lib/random/philox_random.h)
_W32A, _W32B = 0x9E3779B9, 0xBB67AE85
_M4X32A, _M4X32B = 0xD2511F53, 0xCD9E8D57
_LOW32 = 0xFFFFFFFF


@contextlib.contextmanager
def minibatch_noise(seed: tf.Tensor, rows: tf.Tensor) -> Iterator[None]:
    """Within this block, :func:`noise_seed_and_rows` returns ``seed`` ([2] int64) and ``rows`` ([B] int64:
    the minibatch's row indices in the training data). Used by ``fit`` around ``model.training_loss``
    (also while tracing its step)."""
    token = _MINIBATCH.set((tf.cast(seed, tf.int64), tf.cast(rows, tf.int64)))
    try:
        yield
    finally:
        _MINIBATCH.reset(token)


def noise_seed_and_rows(generator: tf.random.Generator, num_rows: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """The seed [2] int64 and the row indices [B] int64 for this minibatch's per-row draws: those of the
    enclosing :func:`minibatch_noise` block, else a fresh seed from ``generator`` and rows 0..B-1."""
    announced = _MINIBATCH.get()
    if announced is not None:
        return announced
    seed = generator.make_seeds(1)[:, 0]  # [2] int64
    return seed, tf.range(tf.cast(num_rows, tf.int64), dtype=tf.int64)


def announced_noise() -> tuple[tf.Tensor, tf.Tensor] | None:
    """The ``(seed, rows)`` of the enclosing :func:`minibatch_noise` block (under ``fit``), else None."""
    return _MINIBATCH.get()


def philox_key(seed: tf.Tensor) -> tf.Tensor:
    """The Philox key ``K(seed)``: two uint32 words (held as uint64) drawn statelessly from ``seed`` [2]."""
    words = tf.random.stateless_uniform([2], seed=seed, minval=None, maxval=None, dtype=tf.uint32)
    return tf.cast(words, tf.uint64)  # [2]


def _philox(key: tf.Tensor, counter: tuple[tf.Tensor, ...]) -> tuple[tf.Tensor, ...]:
    """Philox-4x32-10 of 32-bit words held in uint64 tensors (any common shape): four output words."""
    c0, c1, c2, c3 = counter
    k0, k1 = key[0], key[1]
    low = tf.constant(_LOW32, tf.uint64)
    shift = tf.constant(32, tf.uint64)
    for _ in range(10):
        p0 = tf.constant(_M4X32A, tf.uint64) * c0  # < 2⁶⁴: exact
        p1 = tf.constant(_M4X32B, tf.uint64) * c2
        hi0, lo0 = tf.bitwise.right_shift(p0, shift), tf.bitwise.bitwise_and(p0, low)
        hi1, lo1 = tf.bitwise.right_shift(p1, shift), tf.bitwise.bitwise_and(p1, low)
        c0, c1, c2, c3 = (
            tf.bitwise.bitwise_xor(tf.bitwise.bitwise_xor(hi1, c1), k0),
            lo1,
            tf.bitwise.bitwise_xor(tf.bitwise.bitwise_xor(hi0, c3), k1),
            lo0,
        )
        k0 = tf.bitwise.bitwise_and(k0 + tf.constant(_W32A, tf.uint64), low)
        k1 = tf.bitwise.bitwise_and(k1 + tf.constant(_W32B, tf.uint64), low)
    return c0, c1, c2, c3


def _row_mantissas(seed: tf.Tensor, rows: tf.Tensor, num: int) -> tf.Tensor:
    """52-bit integers [B, num] (uint64): the first ``num`` doubles of each row's stream, before scaling."""
    num_blocks = -(-int(num) // 2)  # two doubles per Philox block of four words
    rows = tf.cast(tf.cast(rows, tf.int64), tf.uint64)[:, None]  # [B, 1]
    blocks = tf.range(num_blocks, dtype=tf.int64)[None, :]  # [1, J]
    shape = tf.broadcast_dynamic_shape(tf.shape(rows), tf.shape(blocks))  # [B, J]
    zero = tf.zeros(shape, tf.uint64)
    counter = (
        zero + tf.cast(blocks, tf.uint64),
        zero,
        zero + tf.bitwise.bitwise_and(rows, tf.constant(_LOW32, tf.uint64)),
        zero + tf.bitwise.right_shift(rows, tf.constant(32, tf.uint64)),
    )  # each [B, J]
    x0, x1, x2, x3 = _philox(philox_key(seed), counter)
    high20 = tf.constant(0xFFFFF, tf.uint64)
    first = tf.bitwise.bitwise_or(
        tf.bitwise.left_shift(tf.bitwise.bitwise_and(x0, high20), tf.constant(32, tf.uint64)), x1
    )
    second = tf.bitwise.bitwise_or(
        tf.bitwise.left_shift(tf.bitwise.bitwise_and(x2, high20), tf.constant(32, tf.uint64)), x3
    )
    both = tf.reshape(tf.stack([first, second], axis=-1), [tf.shape(rows)[0], 2 * num_blocks])  # [B, 2J]
    return both[:, :num]  # [B, num]


_MANTISSA_BITS = {tf.float64: 52, tf.float32: 23, tf.float16: 10, tf.bfloat16: 7}


def _unit_interval(mantissa: tf.Tensor, dtype: tf.DType, offset: float) -> tf.Tensor:
    """``(top bits + offset) · 2^-bits`` in ``dtype`` (its mantissa width; float64 keeps all 52 bits), computed
    in ``dtype`` only."""
    dtype = tf.as_dtype(dtype)
    if dtype not in _MANTISSA_BITS:
        raise ValueError(
            f"dtype must be a floating type ({', '.join(d.name for d in _MANTISSA_BITS)}), got {dtype.name}"
        )
    bits = _MANTISSA_BITS[dtype]
    top = tf.bitwise.right_shift(mantissa, tf.constant(52 - bits, tf.uint64))  # [B, num] < 2^bits
    return (tf.cast(top, dtype) + tf.constant(offset, dtype)) * tf.constant(2.0**-bits, dtype)


def row_uniform(seed: tf.Tensor, rows: tf.Tensor, num: int, dtype: tf.DType = tf.float64) -> tf.Tensor:
    """U[0, 1) draws [B, num]: row ``rows[b]``'s first ``num`` numbers under ``seed`` (float64: TF's doubles
    exactly; narrower types: their leading bits)."""
    return _unit_interval(_row_mantissas(seed, rows, num), dtype, 0.0)  # [B, num]


def row_normal(seed: tf.Tensor, rows: tf.Tensor, num: int, dtype: tf.DType = tf.float64) -> tf.Tensor:
    """Standard-normal draws [B, num] by the inverse normal CDF of each row's uniforms (at cell midpoints,
    so never 0 or 1)."""
    return tf.math.ndtri(_unit_interval(_row_mantissas(seed, rows, num), dtype, 0.5))  # [B, num]


def shared_normal(
    seed: tf.Tensor, num_streams: int, num: int, dtype: tf.DType = tf.float64, first_stream: int = 0
) -> tf.Tensor:
    """Standard-normal draws [num_streams, num] shared by a whole minibatch (e.g. samples of inducing values):
    :func:`row_normal` of the negative row indices ``-1 - first_stream, -2 - first_stream, ...``, streams no
    training row uses. Integer arithmetic and ``ndtri`` only, so a ``jit_compile`` step draws the same numbers."""
    streams = -1 - (first_stream + tf.range(num_streams, dtype=tf.int64))  # [num_streams]
    return row_normal(seed, streams, num, dtype)  # [num_streams, num]
