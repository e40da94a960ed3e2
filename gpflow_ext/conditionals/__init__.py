"""q(f) for the library's inducing variables and output layouts.

Importing a submodule registers it with GPflow's ``conditional`` dispatcher where it applies.
"""

from . import grid, multilabel, pairs, preconditioned

__all__ = ["multilabel", "grid", "pairs", "preconditioned"]
