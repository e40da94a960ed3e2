"""Multi-label readers: the Extreme Classification Repository text format and Mulan sparse ARFF.

Both return ``MultiLabelData(X, Y, ...)`` with ``X`` a ``scipy.sparse.csr_matrix`` [N, D]
of features and ``Y`` a ``csr_matrix`` [N, K] of 0/1 labels. Nothing is ever densified.

Extreme Classification Repository (XMC) text format (http://manikvarma.org/downloads/XC/XMLRepository.html)::

    N D K
    l1,l2,... f:v f:v ...        # one row per data point; labels and features 0-based

A row with no label starts directly with its features (or with a space). The repository's
``*_trSplit.txt`` / ``*_tstSplit.txt`` files hold one column per random split, each entry a
1-based row index into the data file (``read_xmc_split``, ``load_xmc_split``).

Mulan (http://mulan.sourceforge.net/format.html): an ARFF file whose attributes are the
features followed or interleaved by the labels, and an XML file naming the label attributes.
Data lines are sparse (``{index value, ...}``, omitted entries are 0) or dense (``v1,v2,...``).
"""
import re
import warnings
import xml.etree.ElementTree as ElementTree
from typing import List, NamedTuple, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from ._io import DataFormatError, DataFormatWarning, PathLike, as_existing_file, open_text

__all__ = [
    "MultiLabelData",
    "read_xmc_text",
    "write_xmc_text",
    "read_xmc_split",
    "load_xmc_split",
    "read_mulan_labels",
    "read_mulan_arff",
    "select_rows",
]


class MultiLabelData(NamedTuple):
    """Features ``X`` (CSR [N, D]) and labels ``Y`` (CSR [N, K], entries 1.0); names when the format has them."""

    X: sp.csr_matrix
    Y: sp.csr_matrix
    feature_names: Optional[List[str]] = None
    label_names: Optional[List[str]] = None

    @property
    def num_data(self) -> int:
        return self.X.shape[0]

    @property
    def num_features(self) -> int:
        return self.X.shape[1]

    @property
    def num_labels(self) -> int:
        return self.Y.shape[1]


def _labels_csr(rows: np.ndarray, cols: np.ndarray, shape: Tuple[int, int], dtype) -> sp.csr_matrix:
    Y = sp.csr_matrix((np.ones(len(rows), dtype=dtype), (rows, cols)), shape=shape)
    Y.sum_duplicates()
    Y.data[:] = 1  # a label listed twice is still one label
    return Y


def _features_csr(rows, cols, values, shape, dtype) -> sp.csr_matrix:
    X = sp.csr_matrix((np.asarray(values, dtype=dtype), (rows, cols)), shape=shape)
    X.sum_duplicates()
    return X


# ----------------------------------------------------------------------------------------------
# Extreme Classification Repository text format
# ----------------------------------------------------------------------------------------------
def _parse_header(line: str, path) -> Tuple[int, int, int]:
    parts = line.split()
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise DataFormatError(
            f"{path}: line 1 must be the XMC header 'N D K' (three non-negative integers), got {line.strip()[:80]!r}"
        )
    return int(parts[0]), int(parts[1]), int(parts[2])


def read_xmc_text(path: PathLike, dtype=np.float64) -> MultiLabelData:
    """Read an Extreme Classification Repository text file (optionally ``.gz``/``.xz``).

    :param path: file with header ``N D K`` and N rows ``l1,l2,... f:v f:v ...`` (0-based indices).
    :param dtype: dtype of the feature values and label entries.
    :raises DataFormatError: (a ValueError) naming the line for a bad header, a malformed token,
        a feature index >= D, a label index >= K, a negative index, or a row count different from N.
    """
    path = as_existing_file(path, "path")
    label_rows, label_cols, feat_rows, feat_cols, feat_vals = [], [], [], [], []
    with open_text(path) as handle:
        header = handle.readline()
        if not header:
            raise DataFormatError(f"{path}: empty file, expected the XMC header 'N D K'")
        num_data, num_features, num_labels = _parse_header(header, path)
        row, blank_run = 0, 0
        for line in handle:  # streamed: the text is never held in memory whole
            line = line.rstrip("\r\n")
            if not line.strip():
                blank_run += 1  # an empty row (no label, no feature), unless only blank lines follow
                continue
            row += blank_run
            blank_run = 0
            if row >= num_data:
                raise DataFormatError(f"{path}: header says N={num_data} rows but the file has more (line {row + 2})")
            tokens = line.split()
            if not line[:1].isspace() and ":" not in tokens[0]:
                label_token, feature_tokens = tokens[0], tokens[1:]
            else:
                label_token, feature_tokens = "", tokens
            try:
                if label_token:
                    labels = np.array(label_token.split(","), dtype=np.int64)
                if feature_tokens:
                    pairs = " ".join(feature_tokens).replace(":", " ").split()
                    if len(pairs) != 2 * len(feature_tokens):
                        raise ValueError("each feature must be written 'index:value'")
                    indices = np.array(pairs[0::2], dtype=np.int64)
                    values = np.array(pairs[1::2], dtype=np.float64)
            except ValueError as error:
                raise DataFormatError(f"{path}: line {row + 2}: cannot parse {line[:80]!r} ({error})") from None
            if label_token:
                _check_indices(labels, num_labels, "label", "K", path, row)
                label_rows.append(np.full(len(labels), row, dtype=np.int64))
                label_cols.append(labels)
            if feature_tokens:
                _check_indices(indices, num_features, "feature", "D", path, row)
                feat_rows.append(np.full(len(indices), row, dtype=np.int64))
                feat_cols.append(indices)
                feat_vals.append(values)
            row += 1
    if row != num_data:
        raise DataFormatError(f"{path}: header says N={num_data} rows but the file has {row} data rows")
    concat = lambda parts: np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)  # noqa: E731
    X = _features_csr(concat(feat_rows), concat(feat_cols), concat(feat_vals), (num_data, num_features), dtype)
    Y = _labels_csr(concat(label_rows), concat(label_cols), (num_data, num_labels), dtype)
    return MultiLabelData(X, Y)


def _check_indices(indices: np.ndarray, bound: int, what: str, symbol: str, path, row: int) -> None:
    if indices.size and (indices.min() < 0 or indices.max() >= bound):
        bad = indices[(indices < 0) | (indices >= bound)][0]
        raise DataFormatError(
            f"{path}: line {row + 2}: {what} index {bad} out of range; the header gives {symbol}={bound} "
            f"so indices must lie in [0, {bound})"
        )


def write_xmc_text(path: PathLike, X: sp.spmatrix, Y: sp.spmatrix, value_format: str = "{:g}") -> None:
    """Write ``(X, Y)`` in the XMC text format (plain or ``.gz`` by suffix); the inverse of read_xmc_text."""
    import gzip

    X, Y = sp.csr_matrix(X), sp.csr_matrix(Y)
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X and Y must have the same number of rows, got {X.shape[0]} and {Y.shape[0]}")
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as handle:
        handle.write(f"{X.shape[0]} {X.shape[1]} {Y.shape[1]}\n")
        for i in range(X.shape[0]):
            labels = ",".join(str(j) for j in Y.indices[Y.indptr[i] : Y.indptr[i + 1]])
            start, stop = X.indptr[i], X.indptr[i + 1]
            feats = " ".join(f"{j}:{value_format.format(v)}" for j, v in zip(X.indices[start:stop], X.data[start:stop]))
            handle.write(f"{labels} {feats}".rstrip() + "\n" if labels else f" {feats}".rstrip() + "\n")


def read_xmc_split(path: PathLike, one_based: bool = True) -> np.ndarray:
    """Read a repository ``*_trSplit.txt`` / ``*_tstSplit.txt`` file: int array [n, num_splits] of 0-based row indices.

    Each column is one random split; entries are 1-based row indices into the data file
    (``one_based=False`` for files that are already 0-based).
    """
    path = as_existing_file(path, "path")
    rows = []
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                rows.append([int(token) for token in line.split()])
            except ValueError:
                raise DataFormatError(f"{path}: line {number}: split files hold integers only, got {line.strip()[:80]!r}") from None
            if len(rows[-1]) != len(rows[0]):
                raise DataFormatError(
                    f"{path}: line {number} has {len(rows[-1])} columns but line 1 has {len(rows[0])} (one column per split)"
                )
    if not rows:
        raise DataFormatError(f"{path}: empty split file")
    indices = np.asarray(rows, dtype=np.int64)
    if one_based:
        if indices.min() < 1:
            raise DataFormatError(f"{path}: split indices are 1-based but the file contains {indices.min()}")
        indices -= 1
    elif indices.min() < 0:
        raise DataFormatError(f"{path}: negative row index {indices.min()}")
    return indices


def select_rows(data: MultiLabelData, rows: np.ndarray) -> MultiLabelData:
    """The rows ``rows`` of ``data`` (CSR row slicing; names kept)."""
    rows = np.asarray(rows)
    if rows.ndim != 1:
        raise ValueError(f"rows must be a 1-D index array, got shape {rows.shape}")
    if rows.size and (rows.min() < 0 or rows.max() >= data.num_data):
        raise ValueError(f"row index {rows.max() if rows.max() >= data.num_data else rows.min()} out of range for N={data.num_data}")
    return MultiLabelData(data.X[rows], data.Y[rows], data.feature_names, data.label_names)


def load_xmc_split(
    data_path: PathLike, train_split_path: PathLike, test_split_path: PathLike, split: int = 0, dtype=np.float64
) -> Tuple[MultiLabelData, MultiLabelData]:
    """Read a single-file XMC dataset (e.g. ``Bibtex_data.txt``) and cut it by its split files.

    :param split: which column (0-based) of the split files to use.
    :returns: ``(train, test)``.
    """
    data = read_xmc_text(data_path, dtype=dtype)
    parts = []
    for argument, split_path in (("train_split_path", train_split_path), ("test_split_path", test_split_path)):
        indices = read_xmc_split(split_path)
        if not 0 <= split < indices.shape[1]:
            raise ValueError(f"split={split} out of range: {split_path} has {indices.shape[1]} split columns")
        column = indices[:, split]
        if column.max() >= data.num_data:
            raise DataFormatError(
                f"{argument}: {split_path} refers to row {column.max() + 1} (1-based) but {data_path} has N={data.num_data} rows"
            )
        parts.append(select_rows(data, column))
    return parts[0], parts[1]


# ----------------------------------------------------------------------------------------------
# Mulan: sparse (or dense) ARFF + XML label file
# ----------------------------------------------------------------------------------------------
# An attribute name is single- or double-quoted (backslash escapes inside) or a run of non-space
# characters (where a backslash also escapes the next character, e.g. Mulan Delicious' ``TAG_m\'usica``).
_ATTRIBUTE = re.compile(r"""@attribute\s+('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|(?:\\.|\S)+)\s+(.+)""", re.IGNORECASE)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


def _unescape(text: str) -> str:
    """Undo ARFF backslash escapes (Weka's ``Utils.backQuoteChars``): ``\\n \\t \\r`` and ``\\c`` -> ``c`` for any other c."""
    return re.sub(r"\\(.)", lambda match: _ESCAPES.get(match.group(1), match.group(1)), text)


def _unquote(name: str) -> str:
    """An ARFF attribute name as written (quoted or not) -> the name: quotes removed, escapes undone."""
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "'\"":
        name = name[1:-1]
    return _unescape(name)


def _is_binary_nominal(declaration: str) -> bool:
    """True for the type of a Mulan label attribute, ``{0,1}`` (spaces and quotes allowed)."""
    declaration = declaration.split("%", 1)[0].strip()
    if not (declaration.startswith("{") and declaration.endswith("}")):
        return False
    return sorted(value.strip().strip("'\"") for value in declaration[1:-1].split(",")) == ["0", "1"]


def read_mulan_labels(path: PathLike) -> List[str]:
    """Label names from a Mulan XML label file (``<labels><label name="..."/>...``; nested labels included)."""
    path = as_existing_file(path, "xml_path")
    try:
        root = ElementTree.parse(path).getroot()
    except ElementTree.ParseError as error:
        raise DataFormatError(f"{path}: not a valid Mulan XML label file ({error})") from None
    names = [element.get("name") for element in root.iter() if element.tag.rsplit("}", 1)[-1] == "label"]
    if not names or any(name is None for name in names):
        raise DataFormatError(f"{path}: expected <label name=\"...\"> elements, found {len(names)} (some without a name)")
    if len(set(names)) != len(names):
        raise DataFormatError(f"{path}: duplicate label names")
    return names


def read_mulan_arff(arff_path: PathLike, xml_path: PathLike, dtype=np.float64) -> MultiLabelData:
    """Read a Mulan multi-label dataset: ARFF (sparse or dense rows, optionally ``.gz``) + label XML.

    The attributes named in the XML are the labels (columns of ``Y`` in ARFF attribute order);
    all other attributes are the features (columns of ``X`` in ARFF order). Label values must be 0/1.
    Attribute names are read as ARFF defines them: single- or double-quoted (spaces allowed) or bare,
    with backslash escapes (``\\'`` -> ``'``, ``\\n``, ``\\t``, ...) undone. ``%`` lines are comments;
    LF and CRLF line ends are both read.

    Published XML files with misspelt label names are read by position: Mulan's Delicious ``delicious.xml``
    names ``TTAG_m\\'usica`` where ``delicious-*.arff`` declares ``@attribute TAG_m\\'usica {0,1}``; as the
    XML's 983 labels are the last 983 attributes and every other name matches in place, that label is the
    attribute ``TAG_m'usica``, with a ``DataFormatWarning`` naming both spellings (see ``_match_labels``).

    :raises DataFormatError: for a file that is not ARFF, an XML label absent from the ARFF (beyond the
        positional rule above),
        an attribute index beyond the header, a non-numeric value, or a label value other than 0/1.
    """
    arff_path = as_existing_file(arff_path, "arff_path")
    label_names = read_mulan_labels(xml_path)
    attributes: List[str] = []
    raw_names: List[str] = []  # as written in the file, for XML files that copy the escapes
    declarations: List[str] = []
    rows, cols, vals = [], [], []
    num_rows = 0
    in_data = False
    with open_text(arff_path, "arff_path") as handle:
        for number, line in enumerate(handle, start=1):
            stripped = line.strip()
            if not stripped or stripped.startswith("%"):
                continue
            if not in_data:
                lower = stripped.lower()
                if lower.startswith("@attribute"):
                    match = _ATTRIBUTE.match(stripped)
                    if match is None:
                        raise DataFormatError(f"{arff_path}: line {number}: malformed @attribute line {stripped[:80]!r}")
                    attributes.append(_unquote(match.group(1)))
                    raw_names.append(match.group(1))
                    declarations.append(match.group(2))
                elif lower.startswith("@data"):
                    in_data = True
                elif lower.startswith("@relation"):
                    pass
                else:
                    raise DataFormatError(
                        f"{arff_path}: line {number}: not an ARFF header line ({stripped[:60]!r}); "
                        "expected @relation, @attribute or @data"
                    )
                continue
            try:
                if stripped.startswith("{"):
                    if not stripped.endswith("}"):
                        raise ValueError("sparse row must end with '}'")
                    tokens = stripped[1:-1].replace(",", " ").split()
                    if len(tokens) % 2:
                        raise ValueError("sparse entries must be 'index value' pairs")
                    index = np.array(tokens[0::2], dtype=np.int64)
                    value = np.array(tokens[1::2], dtype=np.float64)
                else:
                    tokens = [token.strip() for token in stripped.split(",")]
                    if len(tokens) != len(attributes):
                        raise ValueError(f"dense row has {len(tokens)} values but the header declares {len(attributes)} attributes")
                    value = np.array(tokens, dtype=np.float64)
                    index = np.flatnonzero(value)
                    value = value[index]
            except ValueError as error:
                raise DataFormatError(f"{arff_path}: line {number}: cannot parse data row {stripped[:60]!r}... ({error})") from None
            if index.size and (index.min() < 0 or index.max() >= len(attributes)):
                raise DataFormatError(
                    f"{arff_path}: line {number}: attribute index {index.max()} out of range; the header declares "
                    f"{len(attributes)} attributes"
                )
            rows.append(np.full(len(index), num_rows, dtype=np.int64))
            cols.append(index)
            vals.append(value)
            num_rows += 1
    if not attributes or not in_data:
        raise DataFormatError(f"{arff_path}: not an ARFF file (no @attribute declarations and @data section found)")

    label_index = _match_labels(label_names, attributes, raw_names, declarations, arff_path, xml_path)
    is_label = np.zeros(len(attributes), dtype=bool)
    is_label[label_index] = True
    column = np.empty(len(attributes), dtype=np.int64)
    column[is_label] = np.arange(is_label.sum())
    column[~is_label] = np.arange((~is_label).sum())

    rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    cols = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    vals = np.concatenate(vals) if vals else np.zeros(0)
    label_entry = is_label[cols]
    label_values = vals[label_entry]
    if np.any((label_values != 0) & (label_values != 1)):
        raise DataFormatError(f"{arff_path}: label attributes must be 0/1, found value {label_values[(label_values != 0) & (label_values != 1)][0]}")
    keep = label_values == 1
    num_labels = int(is_label.sum())
    Y = _labels_csr(rows[label_entry][keep], column[cols[label_entry]][keep], (num_rows, num_labels), dtype)
    feature_entry = ~label_entry
    X = _features_csr(rows[feature_entry], column[cols[feature_entry]], vals[feature_entry], (num_rows, len(attributes) - num_labels), dtype)
    X.eliminate_zeros()
    feature_names = [name for name, flag in zip(attributes, is_label) if not flag]
    ordered_labels = [name for name, flag in zip(attributes, is_label) if flag]
    return MultiLabelData(X, Y, feature_names, ordered_labels)


def _match_labels(label_names, attributes, raw_names, declarations, arff_path, xml_path) -> List[int]:
    """Attribute index of each XML label: by name, or, for XML files with misspelt names, by position.

    A label matches the attribute of the same name (after ARFF unquoting and unescaping), or an
    attribute written exactly as the XML writes it, or the XML name with its own backslash escapes
    undone. When some labels match no attribute, the labels are taken by position if the K XML labels
    fit the last (else the first) K attributes: every label that does match sits at its own place in that
    block, at least one matches, and each unmatched place is a ``{0,1}`` attribute. Each unmatched name
    is then reported with ``warnings.warn`` (``DataFormatWarning``). Otherwise DataFormatError.
    """
    position = {name: i for i, name in enumerate(attributes)}
    raw_position = {name: i for i, name in enumerate(raw_names)}
    found: List[Optional[int]] = []
    for name in label_names:
        index = position.get(name)
        if index is None:
            index = raw_position.get(name, position.get(_unescape(name)))
        found.append(index)
    missing = [name for name, index in zip(label_names, found) if index is None]
    if not missing:
        return found
    count = len(label_names)
    for side, start in (("last", len(attributes) - count), ("first", 0)):
        if start < 0 or all(index is None for index in found):
            continue
        fits = all(index == start + i if index is not None else _is_binary_nominal(declarations[start + i])
                   for i, index in enumerate(found))
        if fits:
            for i, (name, index) in enumerate(zip(label_names, found)):
                if index is None:
                    warnings.warn(
                        f"{xml_path}: label '{name}' names no attribute of {arff_path}; the {count} XML labels are "
                        f"the {side} {count} attributes, so label {i} is taken by position as attribute "
                        f"'{attributes[start + i]}' (attribute {start + i})",
                        DataFormatWarning,
                        stacklevel=3,
                    )
            return list(range(start, start + count))
    raise DataFormatError(
        f"{xml_path} names {len(missing)} label(s) absent from the ARFF attributes of {arff_path}, e.g. {', '.join(repr(name) for name in missing[:3])} "
        f"(and its {count} labels are not the first or last {count} attributes with the other names in place)"
    )
