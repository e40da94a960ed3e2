"""Learning-rate schedules by name, for ``fit``'s ``learning_rate=`` and any tf_keras optimizer."""

from typing import Union

from gpflow.keras import tf_keras

__all__ = ["LEARNING_RATE_DECAYS", "decayed_learning_rate"]

LEARNING_RATE_DECAYS = ("constant", "cosine")


def decayed_learning_rate(
    learning_rate: float, decay: str, total_steps: int, *, name: str = "decay"
) -> Union[float, "tf_keras.optimizers.schedules.LearningRateSchedule"]:
    """``learning_rate`` itself (``decay="constant"``) or a cosine decay from it to 0 over ``total_steps``
    optimizer steps (``"cosine"``, ``tf_keras`` ``CosineDecay``): with noisy (minibatch, Monte Carlo) gradients
    the last steps shrink, so the parameters settle instead of ending one noisy step from an optimum.
    ``name`` is the caller's argument name in the error for an unknown ``decay``."""
    if decay not in LEARNING_RATE_DECAYS:
        raise ValueError(f"{name} must be 'constant' or 'cosine', got {decay!r}")
    if decay == "constant" or total_steps <= 0:
        return learning_rate
    return tf_keras.optimizers.schedules.CosineDecay(learning_rate, int(total_steps))
