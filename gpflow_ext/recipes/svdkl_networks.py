"""SV-DKL's networks and the DNN stage's optimizers (Section 5): the fully connected d-1000-1000-500-50-c network,
Caffe's LeNet, Adam/AdamW/SGD with an optional cosine-decayed learning rate."""

from collections.abc import Sequence
from typing import Any

import gpflow
import numpy as np
from gpflow.keras import tf_keras

from ..training import decayed_learning_rate as training_decayed_learning_rate

__all__ = ["build_mlp", "build_lenet", "network_optimizer", "epochs_decayed_learning_rate", "NETWORK_OPTIMIZERS"]

NETWORK_OPTIMIZERS = ("adam", "sgd")


def build_mlp(
    input_dim: int, num_outputs: int, hidden: Sequence[int] = (1000, 1000, 500, 50), seed: int = 0, dropout: float = 0.0
) -> tf_keras.Model:
    """The paper's fully connected d-1000-1000-500-50-c ReLU network (Section 5.1/5.2).

    ``dropout > 0`` adds a ``Dropout(dropout)`` after every hidden ReLU (active in training steps, off in
    prediction); the paper does not use it. Layers compute in ``gpflow.default_float()`` at call time."""
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
    tf_keras.utils.set_random_seed(seed)
    F = gpflow.default_float()  # at call time: float32 after gpflow.config.set_default_float(np.float32)
    layers = [tf_keras.Input((input_dim,), dtype=F)]
    for h in hidden:
        layers.append(tf_keras.layers.Dense(h, activation="relu", dtype=F))
        if dropout > 0:
            layers.append(tf_keras.layers.Dropout(dropout, seed=seed, dtype=F))
    layers += [tf_keras.layers.Dense(num_outputs, dtype=F)]
    return tf_keras.Sequential(layers, name="mlp")


def build_lenet(num_outputs: int = 10, seed: int = 0, input_shape=(28, 28, 1)) -> tf_keras.Model:
    """Caffe's LeNet for MNIST: conv20(5) - pool - conv50(5) - pool - fc500 - fc c."""
    tf_keras.utils.set_random_seed(seed)
    F = gpflow.default_float()
    return tf_keras.Sequential(
        [
            tf_keras.Input(input_shape, dtype=F),
            tf_keras.layers.Conv2D(20, 5, dtype=F),
            tf_keras.layers.MaxPooling2D(2, dtype=F),
            tf_keras.layers.Conv2D(50, 5, dtype=F),
            tf_keras.layers.MaxPooling2D(2, dtype=F),
            tf_keras.layers.Flatten(dtype=F),
            tf_keras.layers.Dense(500, activation="relu", dtype=F),
            tf_keras.layers.Dense(num_outputs, dtype=F),
        ],
        name="lenet",
    )


def epochs_decayed_learning_rate(learning_rate: float, decay: str, epochs: int, num_data: int, batch_size: int) -> Any:
    """``learning_rate`` itself (``decay="constant"``) or a cosine decay from it to 0 over ``epochs`` epochs
    of ceil(num_data / batch_size) steps each (``"cosine"``)."""
    steps = epochs * -(-num_data // min(batch_size, num_data))  # epochs × ceil(N / B)
    return training_decayed_learning_rate(learning_rate, decay, steps, name="network_lr_decay")


def network_optimizer(name: str, learning_rate: Any, weight_decay: float = 0.0) -> tf_keras.optimizers.Optimizer:
    """The DNN stage's tf_keras optimizer: ``"adam"`` (``AdamW`` when ``weight_decay > 0``) or ``"sgd"``
    (momentum 0.9, as Caffe's LeNet solver). ``learning_rate`` may be a schedule."""
    if name not in NETWORK_OPTIMIZERS:
        raise ValueError(f"network_optimizer must be one of {NETWORK_OPTIMIZERS}, got {name!r}")
    if not np.isfinite(weight_decay) or weight_decay < 0:
        raise ValueError(f"network_weight_decay must be a finite number >= 0, got {weight_decay!r}")
    if name == "sgd":
        return tf_keras.optimizers.SGD(learning_rate, momentum=0.9, weight_decay=weight_decay or None)
    if weight_decay > 0:
        return tf_keras.optimizers.AdamW(learning_rate, weight_decay=weight_decay)
    return tf_keras.optimizers.Adam(learning_rate)
