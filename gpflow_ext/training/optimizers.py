"""Optimizers for :func:`gpflow_ext.training.fit` beyond a single tf_keras optimizer.

:class:`GroupedOptimizer` gives each group of variables its own tf_keras optimizer, e.g. a small
Adam learning rate for a deep kernel's network weights and a larger one for the GP layer's
variational parameters and hyperparameters (SV-DKL's joint stage, ``pretrain_and_fit``'s
``joint_gp_learning_rate``). tf_keras has no such class (TensorFlow Addons' ``MultiOptimizer``
is no longer maintained), so this one is a small ``tf.Module``: checkpoints made by ``fit`` hold
every inner optimizer's slots. :func:`adam_by_group` builds one from named variable groups, e.g. a
model's ``parameter_groups()`` (:meth:`gpflow_ext.models.GPLVF.parameter_groups`), and a rate per name.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import tensorflow as tf

__all__ = ["GroupedOptimizer", "adam_by_group"]


class GroupedOptimizer(tf.Module):
    """Route each variable's gradient to the optimizer of the group that holds it.

    ``GroupedOptimizer([(Adam(1e-4), network_variables), (Adam(1e-2), gp_variables)])``

    Every variable handed to :meth:`build` / :meth:`apply_gradients` must belong to exactly one
    group; a variable in no group or in two groups is an error (a silently frozen or doubly
    updated variable is never what a user wants).
    """

    def __init__(self, groups: Sequence[tuple[Any, Sequence[tf.Variable]]], name: str | None = None):
        super().__init__(name=name)
        groups = list(groups)
        if not groups:
            raise ValueError("groups must hold at least one (optimizer, variables) pair")
        self._owner: dict[Any, int] = {}  # variable ref -> group index
        for index, group in enumerate(groups):
            if not isinstance(group, (tuple, list)) or len(group) != 2:
                raise TypeError(f"groups[{index}] must be an (optimizer, variables) pair, got {type(group).__name__}")
            optimizer, variables = group
            if not hasattr(optimizer, "apply_gradients"):
                raise TypeError(
                    f"groups[{index}]: optimizer must have apply_gradients (a tf_keras optimizer), "
                    f"got {type(optimizer).__name__}"
                )
            for variable in variables:
                if variable.ref() in self._owner:
                    raise ValueError(
                        f"groups[{index}]: variable {variable.name!r} is already in groups[{self._owner[variable.ref()]}]"
                    )
                self._owner[variable.ref()] = index
        self.optimizers = [optimizer for optimizer, _ in groups]  # tracked: checkpoints hold their slots

    def _split(self, variables: Sequence[tf.Variable]) -> list[list[int]]:
        """Positions of ``variables`` per group (error if one is in no group)."""
        positions: list[list[int]] = [[] for _ in self.optimizers]
        for position, variable in enumerate(variables):
            index = self._owner.get(variable.ref())
            if index is None:
                raise ValueError(f"variable {variable.name!r} is in no group of this GroupedOptimizer")
            positions[index].append(position)
        return positions

    def build(self, variables: Sequence[tf.Variable]) -> None:
        """Create every inner optimizer's slots for its share of ``variables``."""
        variables = list(variables)
        for optimizer, positions in zip(self.optimizers, self._split(variables)):
            if positions and hasattr(optimizer, "build") and not getattr(optimizer, "_built", False):
                optimizer.build([variables[p] for p in positions])

    def apply_gradients(self, grads_and_vars) -> None:
        """One step of every group's optimizer on its own (gradient, variable) pairs."""
        pairs = list(grads_and_vars)
        for optimizer, positions in zip(self.optimizers, self._split([v for _, v in pairs])):
            if positions:
                optimizer.apply_gradients([pairs[p] for p in positions])


def _check_rate(rate: Any, name: str) -> None:
    """A learning rate is a positive finite number or a tf_keras LearningRateSchedule."""
    from gpflow.keras import tf_keras

    if isinstance(rate, tf_keras.optimizers.schedules.LearningRateSchedule):
        return
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not (0.0 < float(rate) < float("inf")):
        raise ValueError(f"{name} must be a positive finite number or a LearningRateSchedule, got {rate!r}")


def adam_by_group(
    groups: Mapping[str, Sequence[tf.Variable]],
    learning_rates: Mapping[str, Any],
    default_learning_rate: Any,
) -> GroupedOptimizer:
    """A :class:`GroupedOptimizer` with one tf_keras Adam per named group of variables.

    ``adam_by_group(model.parameter_groups(), {"flow": 1e-3}, 0.01)``: the groups named in
    ``learning_rates`` get their own rate, every other group ``default_learning_rate`` (numbers or
    tf_keras ``LearningRateSchedule``). ``groups`` must not share a variable (each variable's gradient
    goes to exactly one Adam); empty groups are skipped. A name in ``learning_rates`` that is not in
    ``groups`` is an error (a rate for a group the model does not have would silently do nothing).
    Pass the result to :func:`gpflow_ext.training.fit` as ``optimizer=``.
    """
    from gpflow.keras import tf_keras

    if not isinstance(groups, Mapping) or not groups:
        raise ValueError(f"groups must be a non-empty mapping name -> variables, got {groups!r}")
    if not isinstance(learning_rates, Mapping):
        raise TypeError(f"learning_rates must be a mapping group name -> rate, got {type(learning_rates).__name__}")
    unknown = sorted(set(learning_rates) - set(groups))
    if unknown:
        raise ValueError(f"learning_rates names groups {unknown} that are not among the groups {sorted(groups)}")
    _check_rate(default_learning_rate, "default_learning_rate")
    for name, rate in learning_rates.items():
        _check_rate(rate, f"learning_rates[{name!r}]")
    pairs = [
        (
            tf_keras.optimizers.Adam(learning_rates.get(name, default_learning_rate), name=f"adam_{name}"),
            list(variables),
        )
        for name, variables in groups.items()
        if len(variables)
    ]
    return GroupedOptimizer(pairs)
