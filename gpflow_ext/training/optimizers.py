"""Optimizers for :func:`gpflow_ext.training.fit` beyond a single tf_keras optimizer.

:class:`GroupedOptimizer` gives each group of variables its own tf_keras optimizer, e.g. a small
Adam learning rate for a deep kernel's network weights and a larger one for the GP layer's
variational parameters and hyperparameters (SV-DKL's joint stage, ``pretrain_and_fit``'s
``joint_gp_learning_rate``). tf_keras has no such class (TensorFlow Addons' ``MultiOptimizer``
is no longer maintained), so this one is a small ``tf.Module``: checkpoints made by ``fit`` hold
every inner optimizer's slots.
"""
from typing import Any, List, Optional, Sequence, Tuple

import tensorflow as tf

__all__ = ["GroupedOptimizer"]


class GroupedOptimizer(tf.Module):
    """Route each variable's gradient to the optimizer of the group that holds it.

    ``GroupedOptimizer([(Adam(1e-4), network_variables), (Adam(1e-2), gp_variables)])``

    Every variable handed to :meth:`build` / :meth:`apply_gradients` must belong to exactly one
    group; a variable in no group or in two groups is an error (a silently frozen or doubly
    updated variable is never what a user wants).
    """

    def __init__(self, groups: Sequence[Tuple[Any, Sequence[tf.Variable]]], name: Optional[str] = None):
        super().__init__(name=name)
        groups = list(groups)
        if not groups:
            raise ValueError("groups must hold at least one (optimizer, variables) pair")
        self._owner = {}  # variable ref -> group index
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

    def _split(self, variables: Sequence[tf.Variable]) -> List[List[int]]:
        """Positions of ``variables`` per group (error if one is in no group)."""
        positions: List[List[int]] = [[] for _ in self.optimizers]
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
