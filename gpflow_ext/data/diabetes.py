"""Diabetes 130-US hospitals for years 1999-2008 (UCI; Strack et al. 2014): readmission, encoded for a classifier.

Files (UCI's ``dataset_diabetes`` zip; ``shared/data/diabetes-130/``): ``diabetic_data.csv`` (plain, ``.gz``
or ``.xz``), 101,766 encounters x 50 columns, ``?`` for a missing value, and ``IDs_mapping.csv``, which names
the codes of ``admission_type_id``, ``discharge_disposition_id`` and ``admission_source_id`` (three small
tables one after another).

**Targets.** ``target="readmitted"``: UCI's three classes ``NO`` (54,864), ``>30`` (35,545), ``<30`` (11,357).
``target="readmitted_30d"``: readmission within 30 days (``<30``, class 1) against the rest (``NO`` or ``>30``,
class 0), the task of Strack et al. and of most later work. The SV-DKL paper's Table 2 row (n = 101,766, d = 49)
names no target, but its DNN accuracy 0.889 is this binary task's majority rate, 90,409 / 101,766 = 0.8884,
so this is the task to compare with that row.

**Encoding** (``encoding="grouped"``, the default): one group of columns per raw column, close to the 47
raw feature columns rather than the thousands of one-hot columns of the 700-odd ICD-9 codes:

* ``encounter_id`` is dropped (a row id). ``patient_nbr`` is not a feature: it is returned as ``groups``
  (71,518 patients, some with dozens of encounters) so that folds can keep a patient's encounters together
  (``diabetes_folds(grouped=True)``); a random split puts the same patient on both sides.
* Numbers stay numbers (unscaled: standardise with training statistics): the 8 counts ``time_in_hospital``,
  ``num_lab_procedures``, ``num_procedures``, ``num_medications``, ``number_outpatient``, ``number_emergency``,
  ``number_inpatient``, ``number_diagnoses``, and ``age``, whose ten decades ``[0-10)`` .. ``[90-100)`` become
  their midpoints 5 .. 95 (an ordered quantity, so one column, not ten).
* ``diag_1``, ``diag_2``, ``diag_3`` (ICD-9 codes) become the nine groups of Strack et al. 2014 (Table 2):
  circulatory 390-459 and 785, respiratory 460-519 and 786, digestive 520-579 and 787, diabetes 250.xx,
  injury 800-999, musculoskeletal 710-739, genitourinary 580-629 and 788, neoplasms 140-239, and other
  (every other code, V and E codes included); a missing code ``?`` is its own category, subject to the
  rare-category rule below. Then one-hot.
* Every other column is categorical and one-hot encoded: ``race``, ``gender``, ``weight``, ``payer_code``,
  ``medical_specialty``, ``max_glu_serum``, ``A1Cresult``, the 23 medications (No / Steady / Up / Down),
  ``change``, ``diabetesMed``, and the three id codes (codes, not quantities; named from ``IDs_mapping.csv``).
  ``?`` (missing) is a category of its own: in ``weight`` (97% missing), ``payer_code`` and
  ``medical_specialty`` missingness is itself informative, and no row is dropped.
* Rare categories: a category seen in fewer than ``min_count`` encounters (default 100, 0.1%) is merged
  into ``<column>=other`` (for the diagnoses this is the ICD-9 group "other": a rare ``?`` joins it).
  A one-hot column that is 1 in fewer than ``min_count`` rows (a small ``other``) or 0 in fewer than
  ``min_count`` rows (near-constant, e.g. ``acetohexamide=No``, true in all rows but one) is dropped, as it
  carries almost no information; a raw column whose every category goes so (``examide``, ``citoglipton``,
  ``acetohexamide``, ...) drops out.

The category counts are taken over the whole file; they use no target, so they leak nothing about ``y``.
With the defaults this gives the number of columns ``DIABETES_GROUPED_FEATURES`` (asserted by the tests).

``encoding="one-hot"`` gives instead the 8 counts as numbers and every category of every other column
(``age`` and the id codes included, ``?`` kept, ICD-9 codes ungrouped) its own column: 2,518 columns on the
UCI file.
"""

import csv
import io
from typing import NamedTuple

import numpy as np

from .. import config
from ._io import DataFormatError, PathLike, locate, open_text

__all__ = [
    "DiabetesData",
    "load_diabetes",
    "read_diabetes_table",
    "read_ids_mapping",
    "diabetes_folds",
    "icd9_group",
    "ICD9_GROUPS",
    "DIABETES_TARGETS",
    "DIABETES_GROUPED_FEATURES",
]

DIABETES_TARGETS = {"readmitted": ("NO", ">30", "<30"), "readmitted_30d": ("NO or >30", "<30")}
ICD9_GROUPS = (
    "circulatory",
    "respiratory",
    "digestive",
    "diabetes",
    "injury",
    "musculoskeletal",
    "genitourinary",
    "neoplasms",
    "other",
)
NUMERIC_COLUMNS = (
    "time_in_hospital",
    "num_lab_procedures",
    "num_procedures",
    "num_medications",
    "number_outpatient",
    "number_emergency",
    "number_inpatient",
    "number_diagnoses",
)
ID_COLUMNS = ("admission_type_id", "discharge_disposition_id", "admission_source_id")
DIAGNOSIS_COLUMNS = ("diag_1", "diag_2", "diag_3")
AGE_MIDPOINTS = {f"[{10 * i}-{10 * (i + 1)})": 10 * i + 5 for i in range(10)}
DIABETES_GROUPED_FEATURES = 178  # columns of encoding="grouped" with min_count=100 on the UCI file
_ENCODINGS = ("grouped", "one-hot")
_FOLDERS = ("diabetes-130", "diabetes", "dataset_diabetes")


class DiabetesData(NamedTuple):
    """``X`` [N, D] float, ``y`` [N] int64, names, and ``groups`` [N] (``patient_nbr``) for grouped folds."""

    X: np.ndarray
    y: np.ndarray
    feature_names: list[str]
    class_names: list[str]
    groups: np.ndarray


def icd9_group(code: str) -> str:
    """Strack et al.'s group of an ICD-9 code string (``'428'``, ``'250.83'``, ``'V57'``, ``'E909'``); ``'?'`` stays ``'?'``."""
    code = code.strip()
    if code in ("?", ""):
        return "?"
    if code[0] in "VvEe":
        return "other"
    try:
        value = float(code)
    except ValueError:
        raise ValueError(f"not an ICD-9 code: {code!r}") from None
    whole = int(np.floor(value))
    if whole == 250:
        return "diabetes"
    if 390 <= whole <= 459 or whole == 785:
        return "circulatory"
    if 460 <= whole <= 519 or whole == 786:
        return "respiratory"
    if 520 <= whole <= 579 or whole == 787:
        return "digestive"
    if 800 <= whole <= 999:
        return "injury"
    if 710 <= whole <= 739:
        return "musculoskeletal"
    if 580 <= whole <= 629 or whole == 788:
        return "genitourinary"
    if 140 <= whole <= 239:
        return "neoplasms"
    return "other"


def read_ids_mapping(path: PathLike) -> dict:
    """``IDs_mapping.csv`` -> ``{column: {code: description}}`` for the three id columns."""
    with open_text(path, "ids_mapping_path") as handle:
        text = handle.read()
    tables: dict[str, dict[str, str]] = {}
    current = None
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not any(cell.strip() for cell in row):
            current = None  # the ',' separator lines
            continue
        if len(row) < 2:
            raise DataFormatError(f"{path}: line {number}: expected 'code,description', got {row}")
        if row[0] in ID_COLUMNS:
            current = tables.setdefault(row[0], {})
        elif current is None:
            raise DataFormatError(f"{path}: line {number}: a code before any of the headers {ID_COLUMNS}")
        else:
            current[row[0].strip()] = row[1].strip()
    if set(tables) != set(ID_COLUMNS):
        raise DataFormatError(f"{path}: expected tables for {ID_COLUMNS}, found {sorted(tables)}")
    return tables


def read_diabetes_table(path: PathLike):
    """``diabetic_data.csv`` (plain/.gz/.xz) as a pandas DataFrame of strings and ints, checked against UCI's layout."""
    import pandas as pd

    with open_text(path, "path") as handle:
        text = handle.read()
    try:
        frame = pd.read_csv(io.StringIO(text), na_values=[], keep_default_na=False, dtype=str)
    except (ValueError, pd.errors.ParserError) as error:
        raise DataFormatError(f"{path}: not a CSV file ({error})") from None
    required = ("encounter_id", "patient_nbr", "readmitted", *NUMERIC_COLUMNS, *ID_COLUMNS, *DIAGNOSIS_COLUMNS, "age")
    absent = [column for column in required if column not in frame.columns]
    if absent:
        raise DataFormatError(f"{path}: columns {absent} missing; is this UCI's diabetic_data.csv?")
    for column in ("encounter_id", "patient_nbr", *NUMERIC_COLUMNS, *ID_COLUMNS):
        bad = ~frame[column].str.fullmatch(r"\d+")
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataFormatError(
                f"{path}: line {row + 2}: {column} must be a whole number, got {frame[column].iloc[row]!r}"
            )
        frame[column] = frame[column].astype(np.int64)
    return frame


def _target(frame, target: str, path) -> np.ndarray:
    labels = frame["readmitted"].str.strip()
    unknown = sorted(set(labels) - set(DIABETES_TARGETS["readmitted"]))
    if unknown:
        row = int(np.flatnonzero(~labels.isin(DIABETES_TARGETS["readmitted"]).to_numpy())[0])
        raise DataFormatError(f"{path}: line {row + 2}: readmitted must be one of NO, >30, <30, got {unknown[:3]}")
    if target == "readmitted":
        return labels.map({c: i for i, c in enumerate(DIABETES_TARGETS["readmitted"])}).to_numpy(np.int64)
    return (labels == "<30").to_numpy(np.int64)


def _one_hot(values, column: str, min_count: int, describe=None) -> tuple[list[np.ndarray], list[str]]:
    """One-hot columns of a string Series, rare categories merged into 'other'; rare and near-constant columns dropped."""
    counts = values.value_counts()
    rare = set(counts.index[counts < min_count])
    merged = values.where(~values.isin(rare), "other") if rare else values
    columns, names = [], []
    for category, count in merged.value_counts().sort_index().items():
        if count < min_count or len(values) - count < min_count:
            continue
        columns.append((merged == category).to_numpy(np.float64))
        label = f"{category} ({describe[category]})" if describe and category in describe else category
        names.append(f"{column}={label}")
    return columns, names


def _encode_grouped(frame, min_count: int, descriptions: dict) -> tuple[np.ndarray, list[str]]:
    columns, names = [], []
    for column in NUMERIC_COLUMNS:
        columns.append(frame[column].to_numpy(np.float64))
        names.append(column)
    age = frame["age"].map(AGE_MIDPOINTS)
    if age.isna().any():
        row = int(np.flatnonzero(age.isna().to_numpy())[0])
        raise DataFormatError(
            f"age must be one of {list(AGE_MIDPOINTS)}, got {frame['age'].iloc[row]!r} (data row {row + 1})"
        )
    columns.append(age.to_numpy(np.float64))
    names.append("age")
    skip = {"encounter_id", "patient_nbr", "readmitted", "age", *NUMERIC_COLUMNS}
    for column in frame.columns:
        if column in skip:
            continue
        if column in DIAGNOSIS_COLUMNS:
            try:
                values = frame[column].map(icd9_group)
            except ValueError as error:
                raise DataFormatError(f"{column}: {error}") from None
        else:
            values = frame[column].astype(str).str.strip()
        block, block_names = _one_hot(values, column, min_count, descriptions.get(column))
        columns.extend(block)
        names.extend(block_names)
    return np.stack(columns, axis=1), names


def _encode_one_hot(frame) -> tuple[np.ndarray, list[str]]:
    import pandas as pd

    features = frame.drop(columns=["encounter_id", "patient_nbr", "readmitted"])
    numeric = [c for c in features.columns if c in NUMERIC_COLUMNS]
    categorical = [c for c in features.columns if c not in numeric]
    dummies = pd.get_dummies(features[categorical].astype(str), prefix_sep="=")
    X = np.concatenate([features[numeric].to_numpy(np.float64), dummies.to_numpy(np.float64)], axis=1)
    return X, numeric + list(dummies.columns)


def load_diabetes(
    data_dir: PathLike | None = None,
    target: str = "readmitted",
    encoding: str = "grouped",
    min_count: int = 100,
) -> DiabetesData:
    """Diabetes 130-US (101,766 encounters) as ``DiabetesData(X, y, feature_names, class_names, groups)``.

    :param data_dir: folder holding ``diabetes-130/`` (or ``diabetes/``, ``dataset_diabetes/``) or the files
        themselves; default ``$GPFLOW_EXT_DATA``. Not downloadable: UCI publishes no checksum for its zip.
    :param target: ``"readmitted"`` (NO=0, >30=1, <30=2) or ``"readmitted_30d"`` (<30 = 1 against the rest).
    :param encoding: ``"grouped"`` (ICD-9 groups, rare categories merged; see the module docstring) or
        ``"one-hot"`` (every category its own column).
    :param min_count: the rare-category threshold of ``encoding="grouped"``.
    """
    if target not in DIABETES_TARGETS:
        raise ValueError(f"target must be one of {sorted(DIABETES_TARGETS)}, got {target!r}")
    if encoding not in _ENCODINGS:
        raise ValueError(f"encoding must be one of {_ENCODINGS}, got {encoding!r}")
    if isinstance(min_count, bool) or not isinstance(min_count, (int, np.integer)) or min_count < 1:
        raise ValueError(f"min_count must be a positive integer, got {min_count!r}")
    files = locate(
        "diabetes-130",
        ["diabetic_data.csv"],
        data_dir,
        download=False,
        folders=_FOLDERS[1:],
        optional=["IDs_mapping.csv"],
        required=False,
    )
    if files is None:
        where = data_dir if data_dir is not None else f"${config.DATA_ENV} ({config.data_dir()})"
        raise FileNotFoundError(
            f"data_dir: diabetic_data.csv (plain, .gz or .xz) not found in {where} or its sub-folders {list(_FOLDERS)}"
        )
    path = files["diabetic_data.csv"]
    frame = read_diabetes_table(path)
    y = _target(frame, target, path)
    if encoding == "grouped":
        mapping = files.get("IDs_mapping.csv")
        descriptions = read_ids_mapping(mapping) if mapping is not None else {}
        try:
            X, names = _encode_grouped(frame, min_count, descriptions)
        except DataFormatError as error:
            raise DataFormatError(f"{path}: {error}") from None
    else:
        X, names = _encode_one_hot(frame)
    groups = frame["patient_nbr"].to_numpy(np.int64)
    return DiabetesData(X, y, names, list(DIABETES_TARGETS[target]), groups)


def diabetes_folds(
    data: DiabetesData, n_splits: int = 5, grouped: bool = False, seed: int = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``[(train_rows, test_rows), ...]`` for K-fold cross-validation, stratified by ``data.y``.

    ``grouped=False``: scikit-learn's ``StratifiedKFold`` (shuffled): the plain random K-fold of most papers,
    in which one patient's encounters can fall on both sides. ``grouped=True``: ``StratifiedGroupKFold``
    (shuffled) on ``data.groups`` (``patient_nbr``): no patient is in both the training and the test rows,
    the honest estimate for new patients.
    """
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

    if isinstance(n_splits, bool) or not isinstance(n_splits, (int, np.integer)) or n_splits < 2:
        raise ValueError(f"n_splits must be an integer >= 2, got {n_splits!r}")
    if len(data.y) != len(data.groups) or len(data.y) != len(data.X):
        raise ValueError(
            f"data: X, y and groups must have the same length, got {len(data.X)}, {len(data.y)}, {len(data.groups)}"
        )
    if grouped:
        splitter = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
        return list(splitter.split(np.zeros(len(data.y)), data.y, data.groups))
    splitter = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    return list(splitter.split(np.zeros(len(data.y)), data.y))
