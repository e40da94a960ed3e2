"""UCI tabular readers: Adult (census income) and Connect-4.

Adult (https://archive.ics.uci.edu/dataset/2/adult): ``adult.data`` / ``adult.test``, comma+space
separated, 14 attributes then the class ``<=50K``/``>50K``. ``adult.test`` starts with a comment
line (``|1x3 Cross validator`` in UCI's file, ``# 1x3 Cross validator`` in some copies), which is
skipped, and writes the class with a trailing ``.`` (``<=50K.``), which is stripped.

**Missing values policy** (``?``, which occurs only in workclass, occupation and native-country):

* ``missing="category"`` (default): ``?`` is kept as one more category of those three attributes, so it
  gets its own one-hot column (``workclass=?``). No row is lost (32561 train + 16281 test), D = 108.
* ``missing="drop"``: rows holding any ``?`` are dropped (30162 train + 15060 test), D = 105.

A ``?`` in a continuous column is an error. Categories are the fixed lists of UCI's ``adult.names``,
so the train and test matrices always have the same columns; an unknown category is an error.
Continuous columns are returned raw (no scaling): standardise with training-set statistics.

Connect-4 (https://archive.ics.uci.edu/dataset/26/connect+4): 67557 positions, 42 cells
``a1..a6, b1..b6, ..., g1..g6`` coded ``b``/``o``/``x`` and the outcome for the first player
``win``/``loss``/``draw``. Both the UCI text and the PMLB copy (tab-separated, cells b=0, o=1,
x=2, target draw=0, loss=1, win=2) are read into the same integer coding.
"""

from typing import NamedTuple

import numpy as np

from ._io import DataFormatError, PathLike, as_existing_file, open_text

__all__ = [
    "TabularData",
    "read_adult",
    "ADULT_COLUMNS",
    "ADULT_CATEGORIES",
    "ADULT_MISSING_COLUMNS",
    "read_connect4_uci",
    "read_connect4_pmlb",
    "connect4_one_hot",
    "CONNECT4_CELLS",
    "CONNECT4_CLASSES",
]


class TabularData(NamedTuple):
    X: np.ndarray  # [N, D]
    y: np.ndarray  # [N] int64 class index
    feature_names: list[str]
    class_names: list[str]


ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
)
# Category lists as given in UCI's adult.names.
ADULT_CATEGORIES = {
    "workclass": (
        "Private",
        "Self-emp-not-inc",
        "Self-emp-inc",
        "Federal-gov",
        "Local-gov",
        "State-gov",
        "Without-pay",
        "Never-worked",
    ),
    "education": (
        "Bachelors",
        "Some-college",
        "11th",
        "HS-grad",
        "Prof-school",
        "Assoc-acdm",
        "Assoc-voc",
        "9th",
        "7th-8th",
        "12th",
        "Masters",
        "1st-4th",
        "10th",
        "Doctorate",
        "5th-6th",
        "Preschool",
    ),
    "marital-status": (
        "Married-civ-spouse",
        "Divorced",
        "Never-married",
        "Separated",
        "Widowed",
        "Married-spouse-absent",
        "Married-AF-spouse",
    ),
    "occupation": (
        "Tech-support",
        "Craft-repair",
        "Other-service",
        "Sales",
        "Exec-managerial",
        "Prof-specialty",
        "Handlers-cleaners",
        "Machine-op-inspct",
        "Adm-clerical",
        "Farming-fishing",
        "Transport-moving",
        "Priv-house-serv",
        "Protective-serv",
        "Armed-Forces",
    ),
    "relationship": ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"),
    "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
    "sex": ("Female", "Male"),
    "native-country": (
        "United-States",
        "Cambodia",
        "England",
        "Puerto-Rico",
        "Canada",
        "Germany",
        "Outlying-US(Guam-USVI-etc)",
        "India",
        "Japan",
        "Greece",
        "South",
        "China",
        "Cuba",
        "Iran",
        "Honduras",
        "Philippines",
        "Italy",
        "Poland",
        "Jamaica",
        "Vietnam",
        "Mexico",
        "Portugal",
        "Ireland",
        "France",
        "Dominican-Republic",
        "Laos",
        "Ecuador",
        "Taiwan",
        "Haiti",
        "Columbia",
        "Hungary",
        "Guatemala",
        "Nicaragua",
        "Scotland",
        "Thailand",
        "Yugoslavia",
        "El-Salvador",
        "Trinadad&Tobago",
        "Peru",
        "Hong",
        "Holand-Netherlands",
    ),
}
ADULT_CLASSES = ("<=50K", ">50K")
ADULT_MISSING_COLUMNS = ("workclass", "occupation", "native-country")  # the only columns where UCI's files hold "?"
_MISSING_POLICIES = ("category", "drop")


def _has_missing_column(column: str, missing: str) -> bool:
    return missing == "category" and column in ADULT_MISSING_COLUMNS


def _adult_feature_names(missing: str) -> list[str]:
    names: list[str] = []
    for column in ADULT_COLUMNS:
        if column in ADULT_CATEGORIES:
            categories = ADULT_CATEGORIES[column] + (("?",) if _has_missing_column(column, missing) else ())
            names.extend(f"{column}={category}" for category in categories)
        else:
            names.append(column)
    return names


def read_adult(path: PathLike, missing: str = "category", dtype=np.float64) -> TabularData:
    """Read ``adult.data`` or ``adult.test`` (plain or ``.gz``) into one-hot features.

    :param missing: ``"category"`` (``?`` becomes its own one-hot column) or ``"drop"`` (rows with ``?`` removed);
        see the module docstring.
    :returns: ``TabularData`` with ``X`` [N, 105] (108 with missing="category"), ``y`` (0: ``<=50K``, 1: ``>50K``).
    """
    if missing not in _MISSING_POLICIES:
        raise ValueError(f"missing must be one of {_MISSING_POLICIES}, got {missing!r}")
    path = as_existing_file(path, "path")
    names = _adult_feature_names(missing)
    offsets, index = {}, 0
    for column in ADULT_COLUMNS:
        offsets[column] = index
        index += (
            len(ADULT_CATEGORIES[column]) + _has_missing_column(column, missing) if column in ADULT_CATEGORIES else 1
        )
    lookup = {
        column: {
            category: i
            for i, category in enumerate(ADULT_CATEGORIES[column] + (("?",) if column in ADULT_MISSING_COLUMNS else ()))
        }
        for column in ADULT_CATEGORIES
    }
    rows, labels = [], []
    with open_text(path, encoding="latin-1") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line or line.startswith("|") or line.startswith("#"):
                continue  # blank lines and the test file's comment line
            fields = [field.strip() for field in line.split(",")]
            if len(fields) != 15:
                raise DataFormatError(
                    f"{path}: line {number}: expected 15 comma-separated fields (14 attributes + class), got {len(fields)}"
                )
            label = fields[14].rstrip(".")
            if label not in ADULT_CLASSES:
                raise DataFormatError(
                    f"{path}: line {number}: class must be '<=50K' or '>50K' (optionally with '.'), got {fields[14]!r}"
                )
            if missing == "drop" and "?" in fields[:14]:
                continue
            row = np.zeros(len(names), dtype=dtype)
            for column, value in zip(ADULT_COLUMNS, fields):
                if column in ADULT_CATEGORIES:
                    position = lookup[column].get(value)
                    if position is None and value == "?":
                        raise DataFormatError(
                            f"{path}: line {number}: '?' (missing) in {column}, where Adult has no missing values"
                        )
                    if position is None:
                        raise DataFormatError(f"{path}: line {number}: unknown {column} category {value!r}")
                    row[offsets[column] + position] = 1.0
                else:
                    try:
                        row[offsets[column]] = float(value)
                    except ValueError:
                        raise DataFormatError(
                            f"{path}: line {number}: {column} must be a number, got {value!r}"
                        ) from None
            rows.append(row)
            labels.append(ADULT_CLASSES.index(label))
    if not labels:
        raise DataFormatError(f"{path}: no Adult data rows found")
    return TabularData(np.vstack(rows), np.array(labels, dtype=np.int64), names, list(ADULT_CLASSES))


CONNECT4_CELLS = tuple(f"{column}{row}" for column in "abcdefg" for row in range(1, 7))
CONNECT4_CLASSES = ("draw", "loss", "win")  # PMLB's alphabetical coding 0, 1, 2
_CELL_CODE = {"b": 0, "o": 1, "x": 2}


def read_connect4_uci(path: PathLike) -> TabularData:
    """Read UCI's ``connect-4.data`` (``b,o,x`` cells then ``win/loss/draw``; plain, ``.gz`` or ``.xz``).

    :returns: ``X`` [N, 42] int8 with b=0, o=1, x=2 and ``y`` with draw=0, loss=1, win=2 (PMLB's coding).
    """
    path = as_existing_file(path, "path")
    with open_text(path) as handle:
        lines = [line.strip() for line in handle.read().split("\n") if line.strip()]
    cells = np.empty((len(lines), 42), dtype=np.int8)
    labels = np.empty(len(lines), dtype=np.int64)
    for i, line in enumerate(lines):
        fields = line.split(",")
        if len(fields) != 43:
            raise DataFormatError(
                f"{path}: line {i + 1}: expected 43 comma-separated fields (42 cells + class), got {len(fields)}"
            )
        try:
            cells[i] = [_CELL_CODE[field] for field in fields[:42]]
            labels[i] = CONNECT4_CLASSES.index(fields[42])
        except (KeyError, ValueError):
            raise DataFormatError(
                f"{path}: line {i + 1}: cells must be b/o/x and the class win/loss/draw, got {line[:60]!r}"
            ) from None
    if not lines:
        raise DataFormatError(f"{path}: no Connect-4 rows found")
    return TabularData(cells, labels, list(CONNECT4_CELLS), list(CONNECT4_CLASSES))


def read_connect4_pmlb(path: PathLike) -> TabularData:
    """Read PMLB's ``connect_4.tsv(.gz)`` (header ``a1..g6 target``); same arrays as read_connect4_uci."""
    path = as_existing_file(path, "path")
    with open_text(path) as handle:
        header = handle.readline().split()
        expected = list(CONNECT4_CELLS) + ["target"]
        if header != expected:
            raise DataFormatError(
                f"{path}: header must be the 42 cells a1..g6 then 'target' (PMLB connect_4), got {header[:4]}..."
            )
        lines = [line for line in handle.read().split("\n") if line.strip()]
    try:
        table = np.array([line.split("\t") for line in lines], dtype=np.int64)
    except ValueError:
        raise DataFormatError(f"{path}: expected 43 tab-separated integers per row") from None
    if table.ndim != 2 or table.shape[1] != 43:
        raise DataFormatError(f"{path}: expected 43 tab-separated integers per row, got shape {table.shape}")
    if table.min() < 0 or table.max() > 2:
        raise DataFormatError(f"{path}: cells and target must be coded 0, 1 or 2")
    return TabularData(table[:, :42].astype(np.int8), table[:, 42].copy(), list(CONNECT4_CELLS), list(CONNECT4_CLASSES))


def connect4_one_hot(cells: np.ndarray, dtype=np.float64) -> np.ndarray:
    """One-hot encode the [N, 42] cell codes into [N, 126] (per cell: blank, o, x)."""
    cells = np.asarray(cells)
    if cells.ndim != 2 or cells.shape[1] != 42:
        raise ValueError(f"cells must have shape [N, 42], got {cells.shape}")
    if cells.size and (cells.min() < 0 or cells.max() > 2):
        raise ValueError("cells must be coded 0 (b), 1 (o) or 2 (x)")
    return np.eye(3, dtype=dtype)[cells].reshape(cells.shape[0], 126)
