"""SVDKL's constructor arguments: the GP layer object, the number of features, the feature groups and the class
scores' mean function."""

from collections.abc import Sequence

import gpflow
import numpy as np
from gpflow.keras import tf_keras

from ..variational.latent_gps import KISSGPGrid, LatentGPs

__all__ = ["latent_gps_of", "num_features_of", "feature_groups_array", "class_score_mean"]


def latent_gps_of(inducing: LatentGPs | None) -> LatentGPs:
    """The GP layer object of :class:`SVDKL`'s ``inducing`` argument: ``None`` is ``KISSGPGrid(64)`` (the paper's
    grid with a Toeplitz prior)."""
    if inducing is None:
        return KISSGPGrid(64)
    if not isinstance(inducing, LatentGPs):
        raise TypeError(
            f"inducing must be a gpflow_ext.variational.KISSGPGrid or FreeInducingPoints (or None), got {inducing!r}"
        )
    return inducing


def num_features_of(feature_extractor: tf_keras.layers.Layer, num_features: int | None) -> int:
    """Q: ``num_features``, else the width of the feature extractor's output."""
    if num_features is not None:
        return int(num_features)
    try:
        return int(feature_extractor.output_shape[-1])
    except (AttributeError, RuntimeError, TypeError, ValueError) as err:
        raise ValueError(
            "cannot read the number of features from feature_extractor.output_shape; "
            "build the model (give it an Input) or pass num_features"
        ) from err


def feature_groups_array(feature_groups: Sequence[Sequence[int]] | None, Q: int) -> np.ndarray:
    """``feature_groups`` checked: J non-empty index lists of one size D into [0, Q); ``[J, D]`` int32."""
    if feature_groups is None:
        feature_groups = [[q] for q in range(Q)]
    groups = [list(map(int, g)) for g in feature_groups]
    if len(groups) == 0 or any(len(g) == 0 for g in groups):
        raise ValueError("feature_groups must be a non-empty list of non-empty index lists")
    D = len(groups[0])
    if any(len(g) != D for g in groups):
        raise ValueError(f"all feature_groups must have the same size, got {[len(g) for g in groups]}")
    if min(min(g) for g in groups) < 0 or max(max(g) for g in groups) >= Q:
        raise ValueError(f"feature_groups index features out of range [0, {Q})")
    return np.asarray(groups, dtype=np.int32)


def class_score_mean(
    mean_function: gpflow.mean_functions.MeanFunction | None, Q: int, C: int
) -> gpflow.mean_functions.MeanFunction:
    """The class scores' mean function of features ``[B, Q]`` -> ``[B, C]``: ``None`` is ``Zero(C)``; a ``Linear``
    must have ``A`` of shape ``[Q, C]`` and ``b`` of shape ``[C]``."""
    if mean_function is None:
        return gpflow.mean_functions.Zero(output_dim=C)
    if not isinstance(mean_function, gpflow.mean_functions.MeanFunction):
        raise TypeError(f"mean_function must be a gpflow.mean_functions.MeanFunction or None, got {mean_function!r}")
    if isinstance(mean_function, gpflow.mean_functions.Linear):
        A, b = tuple(mean_function.A.shape), tuple(mean_function.b.shape)
        if A != (Q, C) or b != (C,):
            raise ValueError(
                f"mean_function: a Linear mean of the {Q} features to the {C} class scores needs A of shape "
                f"[{Q}, {C}] and b of shape [{C}] (e.g. Linear(np.zeros(({Q}, {C})), np.zeros({C}))), "
                f"got A {list(A)} and b {list(b)}"
            )
    return mean_function
