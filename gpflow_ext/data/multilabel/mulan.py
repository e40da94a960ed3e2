"""Mulan multi-label datasets: a sparse (or dense) ARFF file plus an XML file naming the labels.

Mulan (http://mulan.sourceforge.net/format.html): an ARFF file whose attributes are the
features followed or interleaved by the labels, and an XML file naming the label attributes.
Data lines are sparse (``{index value, ...}``, omitted entries are 0) or dense (``v1,v2,...``).
"""

import re
import warnings
import xml.etree.ElementTree as ElementTree

import numpy as np

from .._io import DataFormatError, DataFormatWarning, PathLike, as_existing_file, open_text
from .types import MultiLabelData, features_csr, labels_csr

__all__ = ["read_mulan_labels", "read_mulan_arff"]


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


def read_mulan_labels(path: PathLike) -> list[str]:
    """Label names from a Mulan XML label file (``<labels><label name="..."/>...``; nested labels included)."""
    path = as_existing_file(path, "xml_path")
    try:
        root = ElementTree.parse(path).getroot()
    except ElementTree.ParseError as error:
        raise DataFormatError(f"{path}: not a valid Mulan XML label file ({error})") from None
    names = [element.get("name") for element in root.iter() if element.tag.rsplit("}", 1)[-1] == "label"]
    if not names or any(name is None for name in names):
        raise DataFormatError(f'{path}: expected <label name="..."> elements, found {len(names)} (some without a name)')
    if len(set(names)) != len(names):
        raise DataFormatError(f"{path}: duplicate label names")
    return [str(name) for name in names]  # none is None (checked above)


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
    attributes: list[str] = []
    raw_names: list[str] = []  # as written in the file, for XML files that copy the escapes
    declarations: list[str] = []
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
                        raise DataFormatError(
                            f"{arff_path}: line {number}: malformed @attribute line {stripped[:80]!r}"
                        )
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
                        raise ValueError(
                            f"dense row has {len(tokens)} values but the header declares {len(attributes)} attributes"
                        )
                    value = np.array(tokens, dtype=np.float64)
                    index = np.flatnonzero(value)
                    value = value[index]
            except ValueError as error:
                raise DataFormatError(
                    f"{arff_path}: line {number}: cannot parse data row {stripped[:60]!r}... ({error})"
                ) from None
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

    rows_all = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    cols_all = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    vals_all = np.concatenate(vals) if vals else np.zeros(0)
    label_entry = is_label[cols_all]
    label_values = vals_all[label_entry]
    if np.any((label_values != 0) & (label_values != 1)):
        raise DataFormatError(
            f"{arff_path}: label attributes must be 0/1, found value {label_values[(label_values != 0) & (label_values != 1)][0]}"
        )
    keep = label_values == 1
    num_labels = int(is_label.sum())
    Y = labels_csr(rows_all[label_entry][keep], column[cols_all[label_entry]][keep], (num_rows, num_labels), dtype)
    feature_entry = ~label_entry
    X = features_csr(
        rows_all[feature_entry],
        column[cols_all[feature_entry]],
        vals_all[feature_entry],
        (num_rows, len(attributes) - num_labels),
        dtype,
    )
    X.eliminate_zeros()
    feature_names = [name for name, flag in zip(attributes, is_label) if not flag]
    ordered_labels = [name for name, flag in zip(attributes, is_label) if flag]
    return MultiLabelData(X, Y, feature_names, ordered_labels)


def _match_labels(label_names, attributes, raw_names, declarations, arff_path, xml_path) -> list[int]:
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
    found: list[int | None] = []
    for name in label_names:
        index = position.get(name)
        if index is None:
            index = raw_position.get(name, position.get(_unescape(name)))
        found.append(index)
    missing = [name for name, index in zip(label_names, found) if index is None]
    if not missing:
        return [int(index) for index in found if index is not None]
    count = len(label_names)
    for side, start in (("last", len(attributes) - count), ("first", 0)):
        if start < 0 or all(index is None for index in found):
            continue
        fits = all(
            index == start + i if index is not None else _is_binary_nominal(declarations[start + i])
            for i, index in enumerate(found)
        )
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
        f"{xml_path} names {len(missing)} label(s) absent from the ARFF attributes of {arff_path}, "
        f"e.g. {', '.join(repr(name) for name in missing[:3])} "
        f"(and its {count} labels are not the first or last {count} attributes with the other names in place)"
    )
