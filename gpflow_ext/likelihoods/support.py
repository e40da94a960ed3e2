"""The values a scalar likelihood can model, checked on the observed entries before any training step.

GPflow's scalar likelihoods read whatever y they are given: ``Bernoulli`` takes every y other than 1 for a 0,
``Poisson`` gives a number for y = 2.5, and an ``Ordinal`` class outside its bins fails inside the compiled step
with a gather index error. :func:`value_support` says what each likelihood's y may be (by the likelihood's type,
a ``functools.singledispatch`` that users extend for their own likelihoods) and :func:`check_values_in_support`
raises a ``ValueError`` naming the argument, the likelihood, the expectation and the first entry outside it.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import singledispatch

import gpflow
import numpy as np

__all__ = ["ValueSupport", "value_support", "check_values_in_support"]


@dataclass(frozen=True)
class ValueSupport:
    """The y a likelihood models: ``allowed(values) -> bool array`` and its description (``"0 or 1"``)."""

    allowed: Callable[[np.ndarray], np.ndarray]
    description: str


def _is_integer(values: np.ndarray) -> np.ndarray:
    return np.equal(np.round(values), values)


REAL = ValueSupport(np.isfinite, "finite numbers")


@singledispatch
def value_support(likelihood: gpflow.likelihoods.ScalarLikelihood) -> ValueSupport:
    """What ``likelihood``'s observations may be; finite numbers for a likelihood not registered here."""
    return REAL


@value_support.register
def _(likelihood: gpflow.likelihoods.Bernoulli) -> ValueSupport:
    return ValueSupport(lambda y: (y == 0) | (y == 1), "0 or 1")


@value_support.register
def _(likelihood: gpflow.likelihoods.Ordinal) -> ValueSupport:
    num_bins = int(likelihood.num_bins)
    return ValueSupport(
        lambda y: np.isfinite(y) & _is_integer(y) & (y >= 0) & (y <= num_bins - 1),
        f"the class indices 0, ..., {num_bins - 1} (integers; {num_bins} bins from {num_bins - 1} edges)",
    )


@value_support.register
def _(likelihood: gpflow.likelihoods.Poisson) -> ValueSupport:
    return ValueSupport(lambda y: np.isfinite(y) & _is_integer(y) & (y >= 0), "non-negative integers (counts)")


@value_support.register
def _(likelihood: gpflow.likelihoods.Beta) -> ValueSupport:
    return ValueSupport(lambda y: (y >= 0) & (y <= 1), "numbers from 0 to 1")


@value_support.register
def _(likelihood: gpflow.likelihoods.Exponential) -> ValueSupport:
    return ValueSupport(lambda y: np.isfinite(y) & (y >= 0), "finite non-negative numbers")


@value_support.register
def _(likelihood: gpflow.likelihoods.Gamma) -> ValueSupport:
    return ValueSupport(lambda y: np.isfinite(y) & (y > 0), "finite positive numbers")


def check_values_in_support(
    likelihood: gpflow.likelihoods.ScalarLikelihood,
    likelihood_columns: np.ndarray | None,
    values: np.ndarray,
    observed: np.ndarray,
    name: str,
) -> tuple[np.ndarray, np.ndarray]:
    """``(values, observed)`` unchanged when every observed entry of ``values`` [N, D] is one its column's
    likelihood models (``likelihood_columns`` [D] into a ``SwitchedLikelihood``, or None: ``likelihood`` serves
    every column); otherwise a ``ValueError`` naming ``name``, the likelihood, what it models and the first entry
    (row, column, value) outside it. Unobserved entries are not read."""
    columns = np.zeros(values.shape[1], dtype=np.int64) if likelihood_columns is None else likelihood_columns
    for k in np.unique(columns):
        column_likelihood = likelihood if likelihood_columns is None else likelihood.likelihoods[int(k)]
        support = value_support(column_likelihood)
        in_columns = (columns == k)[None, :]  # [1, D]
        with np.errstate(invalid="ignore"):
            outside = observed.astype(bool) & in_columns & ~support.allowed(values)  # [N, D]
        if outside.any():
            row, column = (int(i) for i in np.argwhere(outside)[0])
            which = "" if likelihood_columns is None else f" (likelihood.likelihoods[{int(k)}], by likelihood_columns)"
            raise ValueError(
                f"{name}: {type(column_likelihood).__name__}{which} models {support.description}, but "
                f"{int(outside.sum())} observed entries are not, the first at row {row}, column {column}: "
                f"{values[row, column]!r}"
            )
    return values, observed
