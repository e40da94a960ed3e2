"""Checks of latent-variable models' inputs: base Gaussians (μ, s) and (values, mask, row index) data."""

from typing import Any

import numpy as np

from .arrays import check_data_tuple
from .labels import check_observations, check_row_index


def check_latents(
    x_mean: Any, x_var: Any, latent_dim: int, num_rows: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Base-Gaussian means and variances ``(x_mean [N, Q], x_var [N, Q])`` as float64: same shape, finite,
    ``x_var > 0``; ``num_rows`` (when given) rows each."""
    x_mean = np.asarray(x_mean, dtype=np.float64)
    x_var = np.asarray(x_var, dtype=np.float64)
    for arg, value in (("x_mean", x_mean), ("x_var", x_var)):
        if value.ndim != 2 or value.shape[1] != latent_dim:
            raise ValueError(f"{arg} must have shape [N, {latent_dim}], got {value.shape}")
        if not np.all(np.isfinite(value)):
            raise ValueError(f"{arg} must be finite")
        if num_rows is not None and value.shape[0] != num_rows:
            raise ValueError(f"{arg} must have {num_rows} rows (one per data row), got {value.shape[0]}")
    if x_mean.shape != x_var.shape:
        raise ValueError(f"x_mean {x_mean.shape} and x_var {x_var.shape} must have the same shape")
    if np.any(x_var <= 0):
        raise ValueError("x_var must be strictly positive")
    return x_mean, x_var


def check_equal_variances(x_var: np.ndarray, name: str) -> np.ndarray:
    """[N, Q] variances that are equal along each row -> [N, 1] (the s_n of an isotropic N(μ_n, s_n I_Q))."""
    if not np.allclose(x_var, x_var[:, :1], rtol=1e-12, atol=0.0):
        raise ValueError(
            f"{name} must have equal variances along each row for an isotropic base covariance "
            "(q(x_n) = N(mu_n, s_n I)); pass one value repeated over the latent dimensions"
        )
    return x_var[:, :1].copy()


def check_rows_with_missing_data(
    data: Any, *, num_data: int, output_dim: int, model_name: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(values [N, D], mask [N, D], row index [N])`` of a model with one local latent per training row,
    returned as (float64 values with 0 at missing entries, float64 0/1 mask, int64 row index).

    The values must have all ``output_dim`` outputs (NaN is allowed where the mask is 0); the mask the shape of
    the values; the row index integers in [0, num_data) that select each row's latent. ``(Y,)`` and
    ``(Y, mask)`` (NaN = missing without a mask) are accepted when Y holds the model's num_data rows in order:
    the row index is then 0..N-1.
    """
    parts = check_data_tuple(data, ("values", "mask", "row_index"), model_name, optional_tail=2)
    values = parts[0]
    mask = parts[1] if len(parts) > 1 else None
    values, observed = check_observations(
        values, mask, name="data[0] (values)", num_outputs=output_dim, mask_name="data[1] (mask)"
    )
    if len(parts) == 3:
        rows = check_row_index(parts[2], num_data, name="data[2] (row_index)", num_rows=values.shape[0])
    elif values.shape[0] == num_data:
        rows = np.arange(num_data, dtype=np.int64)
    else:
        raise ValueError(
            f"data[0] (values) has {values.shape[0]} rows but the model has num_data={num_data}; "
            "pass the row index of each row as data[2] (values, mask, row_index)"
        )
    return values, observed.astype(np.float64), rows
