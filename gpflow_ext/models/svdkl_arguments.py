"""SVDKL's constructor arguments: the GP layer object, the number of features and the feature groups."""

from collections.abc import Sequence

import numpy as np
from gpflow.keras import tf_keras

from ..variational.latent_gps import KISSGPGrid, LatentGPs

__all__ = ["latent_gps_of", "num_features_of", "feature_groups_array"]


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
