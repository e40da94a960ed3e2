"""Small problems shared by the training tests, handed out by the ``th`` fixture
(--import-mode=importlib: test modules cannot import each other)."""
from types import SimpleNamespace

import gpflow
import numpy as np
import pytest

from gpflow_ext.training import Callback


def regression_data(n=60, d=2, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(dtype)
    Y = (np.sin(X[:, :1] * 2.0) + 0.1 * rng.normal(size=(n, 1))).astype(dtype)
    return X, Y


def svgp(X, num_inducing=6, num_data=None):
    """A deterministic SVGP (inducing points = first rows) so two builds start identical."""
    return gpflow.models.SVGP(
        gpflow.kernels.SquaredExponential(lengthscales=np.ones(X.shape[1])),
        gpflow.likelihoods.Gaussian(variance=0.5),
        inducing_variable=np.array(X[:num_inducing], copy=True),
        num_data=X.shape[0] if num_data is None else num_data,
    )


def values(model):
    """All variables of a model as float64 numpy arrays, by path."""
    return {name: np.array(p.numpy(), dtype=np.float64) for name, p in gpflow.utilities.parameter_dict(model).items()}


def max_abs_diff(a, b):
    assert a.keys() == b.keys()
    return max(float(np.max(np.abs(a[k] - b[k]))) for k in a)


class StopAtStep(Callback):
    """Raises KeyboardInterrupt (a user's Ctrl-C) after global step ``step``."""

    def __init__(self, step):
        self.stop = step

    def on_step_end(self, run):
        if run.step == self.stop:
            raise KeyboardInterrupt


@pytest.fixture
def th():
    return SimpleNamespace(regression_data=regression_data, svgp=svgp, values=values, max_abs_diff=max_abs_diff,
                           StopAtStep=StopAtStep)
