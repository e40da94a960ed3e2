"""Readers for the two SV-DKL UCI sets not kept in shared/data: Diabetes 130-US and Covertype.

Both read the files as published, plain or compressed (``.gz``, ``.bz2``, ``.xz``, ``.zip`` —
pandas infers it from the suffix):

* ``diabetic_data.csv`` (UCI "Diabetes 130-US hospitals for years 1999-2008", 101 766 encounters,
  50 columns). Target ``readmitted`` ∈ {``NO``, ``>30``, ``<30``} → 0, 1, 2. The identifiers
  ``encounter_id`` and ``patient_nbr`` are dropped; the other 47 columns are features: numeric
  columns as they are, categorical columns (``?`` kept as its own category) one-hot encoded.
* ``covtype.data`` (UCI Covertype, 581 012 rows, 54 numeric columns + ``Cover_Type`` 1..7 → 0..6).
"""
import os
from pathlib import Path
from typing import Optional

import numpy as np

from .uci import TabularData

__all__ = ["read_diabetes", "read_covtype", "load_diabetes", "load_covtype", "find_dataset_file"]

DIABETES_CLASSES = ("NO", ">30", "<30")
_SUFFIXES = ("", ".gz", ".bz2", ".xz", ".zip")


def find_dataset_file(stem: str, folder_names, data_dir: Optional[os.PathLike] = None) -> Path:
    """``data_dir[/folder]/stem[.gz|.bz2|.xz|.zip]`` (default ``$GPFLOW_EXT_DATA``), else a clear error."""
    from .. import config

    root = Path(data_dir).expanduser() if data_dir is not None else config.data_dir()
    if root is None:
        raise FileNotFoundError(f"no data_dir given and ${config.DATA_ENV} is unset; cannot find {stem}")
    searched = []
    for folder in [root / name for name in folder_names] + [root]:
        for suffix in _SUFFIXES:
            path = folder / (stem + suffix)
            searched.append(str(path))
            if path.is_file():
                return path
    raise FileNotFoundError(f"{stem} not found; looked for: {', '.join(searched[:6])} ...")


def read_diabetes(path: os.PathLike, dtype=np.float64) -> TabularData:
    """Diabetes 130-US ``diabetic_data.csv`` (plain or compressed) → one-hot features, readmitted."""
    import pandas as pd

    frame = pd.read_csv(path, na_values=[], keep_default_na=False, low_memory=False)
    if "readmitted" not in frame.columns:
        raise ValueError(f"{path}: no 'readmitted' column; is this diabetic_data.csv?")
    labels = frame.pop("readmitted").astype(str).str.strip()
    unknown = sorted(set(labels) - set(DIABETES_CLASSES))
    if unknown:
        raise ValueError(f"{path}: readmitted has values {unknown} outside {DIABETES_CLASSES}")
    y = labels.map({c: i for i, c in enumerate(DIABETES_CLASSES)}).to_numpy(np.int64)
    frame = frame.drop(columns=[c for c in ("encounter_id", "patient_nbr") if c in frame.columns])
    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])]
    categorical = [c for c in frame.columns if c not in numeric]
    # admission/discharge/source ids are codes, not quantities
    for code in ("admission_type_id", "discharge_disposition_id", "admission_source_id"):
        if code in numeric:
            numeric.remove(code)
            categorical.append(code)
    dummies = pd.get_dummies(frame[categorical].astype(str), prefix_sep="=")
    X = np.concatenate([frame[numeric].to_numpy(dtype), dummies.to_numpy(dtype)], axis=1)
    return TabularData(X, y, list(numeric) + list(dummies.columns), list(DIABETES_CLASSES))


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


def load_diabetes(data_dir: Optional[os.PathLike] = None) -> TabularData:
    return read_diabetes(find_dataset_file("diabetic_data.csv", ["diabetes", "diabetes-130", "dataset_diabetes"], data_dir))


def load_covtype(data_dir: Optional[os.PathLike] = None) -> TabularData:
    return read_covtype(find_dataset_file("covtype.data", ["covtype", "covertype"], data_dir))
