"""How a training step turns gradients into new parameter values.

An *update* splits the trained variables into stages; each stage gets the gradient of the
objective with respect to its own variables (evaluated after the previous stages were applied)
and applies it. The step built by :mod:`gpflow_ext.training.step` applies a stage only when the
objective and its gradients are finite, and rolls the earlier stages back when a later one is not,
so a step is applied whole or not at all.

* :class:`OptimizerUpdate` -- one stage: any tf_keras optimizer (Adam by default) or a
  :class:`~gpflow_ext.training.GroupedOptimizer`;
* :class:`NaturalGradientUpdate` -- natural-gradient steps for Gaussian q(u) = N(q_mu, q_sqrt q_sqrtᵀ)
  (Salimbeni et al. 2018, through ``gpflow.optimizers.NaturalGradient``), then a tf_keras
  optimizer for every other trained variable on a fresh evaluation of the objective: the
  schedule of GPflow's natural-gradient notebook, in one compiled step.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras
from gpflow.optimizers import NaturalGradient, XiNat

__all__ = ["Stage", "Update", "OptimizerUpdate", "NaturalGradientUpdate", "as_update", "optimizer_config"]


@dataclass
class Stage:
    """Variables updated together from one gradient evaluation, and how (called inside the step)."""

    variables: list[tf.Variable]
    apply: Callable[[list[tf.Tensor]], None]


class Update:
    """Base class: ``stages(variables)`` for the variables fit trains; ``trackable`` is checkpointed
    (optimizer slots); ``config()`` is stored in the checkpoint fingerprint."""

    trackable: Any

    def build(self, model: tf.Module, variables: Sequence[tf.Variable]) -> None:
        """Create optimizer state (slots) before tracing and before a checkpoint is restored."""

    def stages(self, model: tf.Module, variables: Sequence[tf.Variable]) -> list[Stage]:
        raise NotImplementedError

    def config(self) -> dict[str, Any]:
        raise NotImplementedError


def _build_optimizer(optimizer: Any, variables: Sequence[tf.Variable]) -> None:
    if hasattr(optimizer, "build") and callable(optimizer.build):
        if not getattr(optimizer, "_built", False):
            optimizer.build(list(variables))


def optimizer_config(optimizer: Any) -> dict[str, Any]:
    """A JSON-able description of an optimizer (class and hyperparameters) for fingerprints."""
    inner = getattr(optimizer, "optimizers", None)
    if inner is not None:  # GroupedOptimizer
        return {"class": type(optimizer).__name__, "groups": [optimizer_config(o) for o in inner]}
    config: dict[str, Any] = {"class": type(optimizer).__name__}
    try:
        raw = optimizer.get_config()
    except Exception:  # an optimizer without get_config: its class is all we can compare
        return config
    for key, value in raw.items():
        if key in ("name", "is_legacy_optimizer", "jit_compile"):
            continue
        if hasattr(value, "numpy"):
            value = value.numpy().item()
        if isinstance(value, (float, np.floating)):  # float32 hyperparameters: 0.05 reads 0.0500000007
            value = float(f"{float(value):.7g}")
        config[key] = value
    return config


class OptimizerUpdate(Update):
    """One stage: ``optimizer.apply_gradients`` on every trained variable."""

    def __init__(self, optimizer: Any):
        if not hasattr(optimizer, "apply_gradients"):
            raise TypeError(
                f"optimizer must have apply_gradients (a tf_keras optimizer), got {type(optimizer).__name__}"
            )
        self.optimizer = optimizer
        self.trackable = optimizer

    def build(self, model: tf.Module, variables: Sequence[tf.Variable]) -> None:
        _build_optimizer(self.optimizer, variables)

    def stages(self, model: tf.Module, variables: Sequence[tf.Variable]) -> list[Stage]:
        variables = list(variables)

        def apply(grads: list[tf.Tensor]) -> None:
            self.optimizer.apply_gradients(zip(grads, variables))

        return [Stage(variables, apply)]

    def config(self) -> dict[str, Any]:
        return optimizer_config(self.optimizer)


def variational_pairs(model: tf.Module) -> list[tuple[gpflow.Parameter, gpflow.Parameter]]:
    """The (q_mu, q_sqrt) pairs of a model with full-covariance Gaussian q(u) (SVGP and its kin)."""
    q_mu, q_sqrt = getattr(model, "q_mu", None), getattr(model, "q_sqrt", None)
    if not isinstance(q_mu, gpflow.Parameter) or not isinstance(q_sqrt, gpflow.Parameter):
        raise ValueError(
            f"{type(model).__name__} has no q_mu / q_sqrt Parameters; pass "
            "NaturalGradientUpdate(variational_parameters=[(q_mu, q_sqrt), ...]) explicitly"
        )
    if q_sqrt.shape.rank != 3:
        raise ValueError(
            f"natural gradients need a full-covariance q_sqrt [L, M, M]; {type(model).__name__}.q_sqrt has "
            f"shape {tuple(q_sqrt.shape)} (build the model with q_diag=False)"
        )
    return [(q_mu, q_sqrt)]


class NaturalGradientUpdate(Update):
    """Natural-gradient steps of length ``gamma`` for Gaussian q(u), then ``optimizer`` for the rest.

    :param gamma: step length in (0, 1]; with a conjugate (Gaussian) likelihood on the full data,
        ``gamma=1`` jumps to the optimal q(u) in one step. Smaller values damp minibatch noise.
    :param optimizer: tf_keras optimizer for every other trained variable (hyperparameters,
        inducing inputs, local parameters ...); default ``tf_keras.optimizers.Adam(0.01)``.
    :param variational_parameters: ``[(q_mu, q_sqrt), ...]`` gpflow Parameters (default: the
        model's ``q_mu``/``q_sqrt``). q_sqrt must be full [L, M, M] (GPflow supports no q_diag here).
    :param xi_transform: GPflow's ξ parameterisation of the natural-gradient step (``XiNat()``).

    Equal to GPflow's own loop ``natgrad.minimize(loss, [(q_mu, q_sqrt)])`` followed by
    ``adam.minimize(loss, other_variables)`` on the same minibatch.
    """

    def __init__(
        self,
        gamma: float = 1.0,
        optimizer: Any | None = None,
        variational_parameters: Sequence[tuple[gpflow.Parameter, gpflow.Parameter]] | None = None,
        xi_transform: Any = None,
    ):
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not 0.0 < float(gamma) <= 1.0:
            raise ValueError(f"gamma must be a number in (0, 1], got {gamma!r}")
        if optimizer is not None and not hasattr(optimizer, "apply_gradients"):
            raise TypeError(
                f"optimizer must have apply_gradients (a tf_keras optimizer), got {type(optimizer).__name__}"
            )
        self.gamma = float(gamma)
        self.xi_transform = xi_transform if xi_transform is not None else XiNat()
        self.natgrad = NaturalGradient(gamma=self.gamma, xi_transform=self.xi_transform)
        self.optimizer = optimizer if optimizer is not None else tf_keras.optimizers.Adam(0.01)
        self.pairs = None if variational_parameters is None else [tuple(p) for p in variational_parameters]
        self.trackable = self.optimizer  # the natural-gradient step keeps no state

    def _pairs(self, model: tf.Module):
        return self.pairs if self.pairs is not None else variational_pairs(model)

    def _split(self, model: tf.Module, variables: Sequence[tf.Variable]):
        pairs = self._pairs(model)
        natural = {p.unconstrained_variable.ref() for pair in pairs for p in pair}
        missing = [
            p.name for pair in pairs for p in pair if p.unconstrained_variable.ref() not in {v.ref() for v in variables}
        ]
        if missing:
            raise ValueError(
                f"the variational parameters {missing} are not among the trained variables; "
                "make them trainable (gpflow.set_trainable) or include them in variables="
            )
        others = [v for v in variables if v.ref() not in natural]
        return pairs, others

    def build(self, model: tf.Module, variables: Sequence[tf.Variable]) -> None:
        _, others = self._split(model, variables)
        if others:
            _build_optimizer(self.optimizer, others)

    def stages(self, model: tf.Module, variables: Sequence[tf.Variable]) -> list[Stage]:
        pairs, others = self._split(model, variables)
        natural_variables = [p.unconstrained_variable for pair in pairs for p in pair]

        def natural_step(grads: list[tf.Tensor]) -> None:
            for i, (q_mu, q_sqrt) in enumerate(pairs):
                self.natgrad._natgrad_apply_gradients(grads[2 * i], grads[2 * i + 1], q_mu, q_sqrt, self.xi_transform)

        stages = [Stage(natural_variables, natural_step)]
        if others:

            def optimizer_step(grads: list[tf.Tensor]) -> None:
                self.optimizer.apply_gradients(zip(grads, others))

            stages.append(Stage(others, optimizer_step))
        return stages

    def config(self) -> dict[str, Any]:
        return {
            "class": type(self).__name__,
            "gamma": self.gamma,
            "xi_transform": type(self.xi_transform).__name__,
            "optimizer": optimizer_config(self.optimizer),
        }


def as_update(optimizer: Any, learning_rate: Any) -> Update:
    """``fit``'s ``optimizer=`` argument as an :class:`Update` (default: Adam at ``learning_rate``)."""
    if isinstance(optimizer, Update):
        return optimizer
    if optimizer is None:
        optimizer = tf_keras.optimizers.Adam(learning_rate=learning_rate)
    return OptimizerUpdate(optimizer)
