"""UCI Covertype (581 012 rows, 54 numeric columns + ``Cover_Type`` 1..7 → 0..6), one of SV-DKL's UCI sets.

``covtype.data`` is read as published, plain or compressed (``.gz``, ``.bz2``, ``.xz``, ``.zip``: pandas infers
it from the suffix).
"""

import os

import numpy as np

from ._io import locate
from .uci import TabularData

__all__ = ["read_covtype", "load_covtype"]

_SUFFIXES = (".gz", ".bz2", ".xz", ".zip")  # what pandas decompresses by the suffix


def read_covtype(path: os.PathLike, dtype=np.float64) -> TabularData:
    """UCI ``covtype.data`` (plain or compressed): 54 features, classes 1..7 → 0..6."""
    import pandas as pd

    values = pd.read_csv(path, header=None).to_numpy()
    if values.ndim != 2 or values.shape[1] != 55:
        raise ValueError(f"{path}: expected 55 comma-separated columns, got shape {values.shape}")
    y = values[:, -1].astype(np.int64) - 1
    if y.min() < 0 or y.max() > 6:
        raise ValueError(f"{path}: Cover_Type must be 1..7")
    names = [f"x{i}" for i in range(54)]
    return TabularData(values[:, :-1].astype(dtype), y, names, [str(c) for c in range(1, 8)])


def load_covtype(data_dir: os.PathLike | None = None) -> TabularData:
    """UCI Covertype from ``data_dir`` (``covtype/`` or ``covertype/`` under it, or itself; default
    ``$GPFLOW_EXT_DATA``): ``covtype.data`` plain or ``.gz``/``.bz2``/``.xz``/``.zip``. Local files only.

    :raises FileNotFoundError: naming the folders searched.
    """
    files = locate("covtype", ["covtype.data"], data_dir, download=False, folders=["covertype"], suffixes=_SUFFIXES)
    return read_covtype(files["covtype.data"])
