"""SVDKL's constructor arguments: feature groups, the number of features, and the GP layer object of the
inducing / grid-prior arguments (the strings of earlier releases map to objects with a ``DeprecationWarning``)."""
import warnings
from typing import Optional, Sequence, Union

import numpy as np

from gpflow.keras import tf_keras

from .._deprecation import REMOVED_IN
from ..validation import check_choice
from ..variational.grid_priors import GRID_PRIOR_NAMES, GridPrior, grid_prior_from_name
from ..variational.latent_gps import FreeInducingPoints, KISSGPGrid, LatentGPs

__all__ = ["latent_gps_from_arguments", "num_features_of", "feature_groups_array"]


def _deprecated_argument(old: str, new: str) -> None:
    warnings.warn(
        f"SVDKL({old}) is deprecated and will be removed in gpflow_ext {REMOVED_IN}; use {new} instead.",
        DeprecationWarning,
        stacklevel=4,
    )


def latent_gps_from_arguments(
    inducing: Union[LatentGPs, str, None],
    grid_prior: Union[GridPrior, str, None],
    grid_size: Optional[int],
    num_inducing: Optional[int],
    circulant_period_factor: Optional[float],
    circulant_variational_size: Optional[int],
    out_of_range: Optional[str],
) -> LatentGPs:
    """The GP layer object of :class:`SVDKL`'s arguments; the strings of earlier releases
    (``inducing="grid"|"points"``, ``grid_prior="toeplitz"|"circulant"``, ``circulant_*``) map to objects with
    a ``DeprecationWarning``."""
    if isinstance(inducing, LatentGPs):
        given = dict(grid_prior=grid_prior, grid_size=grid_size, num_inducing=num_inducing, out_of_range=out_of_range,
                     circulant_period_factor=circulant_period_factor,
                     circulant_variational_size=circulant_variational_size)
        extra = [k for k, v in given.items() if v is not None]
        if extra:
            raise ValueError(f"inducing={type(inducing).__name__}(...) carries its own settings; do not also pass {extra}")
        return inducing
    if inducing is not None:
        check_choice(inducing, "inducing", ("grid", "points"))
        new = "KISSGPGrid(grid_size, prior=...)" if inducing == "grid" else "FreeInducingPoints(num_inducing)"
        _deprecated_argument(f"inducing={inducing!r}", f"inducing=gpflow_ext.variational.{new}")
    if isinstance(grid_prior, str):
        check_choice(grid_prior, "grid_prior", GRID_PRIOR_NAMES)
        new = "ToeplitzGridPrior()" if grid_prior == "toeplitz" else "CirculantGridPrior(period_factor, variational_size)"
        _deprecated_argument(f"grid_prior={grid_prior!r}", f"gpflow_ext.variational.{new}")
    elif grid_prior is not None and not isinstance(grid_prior, GridPrior):
        raise TypeError(f"grid_prior must be a GridPrior (ToeplitzGridPrior(), CirculantGridPrior()), got {grid_prior!r}")
    for arg, value in (("circulant_period_factor", circulant_period_factor),
                       ("circulant_variational_size", circulant_variational_size)):
        if value is not None:
            if not isinstance(grid_prior, str):
                raise ValueError(f"{arg} configures grid_prior='circulant' only; pass CirculantGridPrior(...) instead")
            _deprecated_argument(f"{arg}=...", "gpflow_ext.variational.CirculantGridPrior(period_factor, variational_size)")
    if inducing == "points":
        if grid_prior is not None and not (isinstance(grid_prior, str) and grid_prior == "toeplitz"):
            raise ValueError("grid_prior='circulant' needs inducing='grid' and whiten=True")
        return FreeInducingPoints(num_inducing or grid_size or 64)
    if isinstance(grid_prior, str):
        grid_prior = grid_prior_from_name(
            grid_prior, 3.0 if circulant_period_factor is None else circulant_period_factor, circulant_variational_size
        )
    return KISSGPGrid(64 if grid_size is None else grid_size, prior=grid_prior, out_of_range=out_of_range or "clamp")


def num_features_of(feature_extractor: tf_keras.layers.Layer, num_features: Optional[int]) -> int:
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


def feature_groups_array(feature_groups: Optional[Sequence[Sequence[int]]], Q: int) -> np.ndarray:
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
