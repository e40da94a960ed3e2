"""The Extreme Classification Repository (XMC) text format: streaming reader, writer, split files.

Format (http://manikvarma.org/downloads/XC/XMLRepository.html)::

    N D K
    l1,l2,... f:v f:v ...        # one row per data point; labels and features 0-based

A row with no label starts directly with its features (or with a space); an empty line is an
empty row unless only blank lines follow. The repository's ``*_trSplit.txt`` / ``*_tstSplit.txt``
files hold one column per random split, each entry a 1-based row index into the data file.

:func:`iter_xmc_chunks` is the streaming primitive: it reads the file line by line and yields
blocks of rows as :class:`MultiLabelData` (CSR), so memory is bounded by the block, never the file.
:func:`read_xmc_text` stacks the blocks; :class:`XMCTextWriter` writes rows as they come.
"""

import gzip
import lzma
from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from .._io import DataFormatError, PathLike, as_existing_file, open_text
from .types import MultiLabelData, features_csr, labels_csr, select_rows

__all__ = [
    "read_xmc_header",
    "iter_xmc_chunks",
    "read_xmc_text",
    "write_xmc_text",
    "XMCTextWriter",
    "read_xmc_split",
    "load_xmc_split",
]


def _parse_header(line: str, path) -> tuple[int, int, int]:
    parts = line.split()
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise DataFormatError(
            f"{path}: line 1 must be the XMC header 'N D K' (three non-negative integers), got {line.strip()[:80]!r}"
        )
    return int(parts[0]), int(parts[1]), int(parts[2])


def read_xmc_header(path: PathLike) -> tuple[int, int, int]:
    """``(N, D, K)`` from the first line of an XMC text file (reads one line only)."""
    path = as_existing_file(path, "path")
    with open_text(path) as handle:
        header = handle.readline()
    if not header:
        raise DataFormatError(f"{path}: empty file, expected the XMC header 'N D K'")
    return _parse_header(header, path)


def _check_indices(indices: np.ndarray, bound: int, what: str, symbol: str, path, row: int) -> None:
    if indices.size and (indices.min() < 0 or indices.max() >= bound):
        bad = indices[(indices < 0) | (indices >= bound)][0]
        raise DataFormatError(
            f"{path}: line {row + 2}: {what} index {bad} out of range; the header gives {symbol}={bound} "
            f"so indices must lie in [0, {bound})"
        )


def _parse_row(line: str, path, row: int, num_features: int, num_labels: int):
    """One non-blank data line -> (labels int64 [l], feature indices int64 [f], values float64 [f])."""
    tokens = line.split()
    if not line[:1].isspace() and ":" not in tokens[0]:
        label_token, feature_tokens = tokens[0], tokens[1:]
    else:
        label_token, feature_tokens = "", tokens
    labels = indices = _EMPTY_INT
    values = _EMPTY_FLOAT
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
    _check_indices(labels, num_labels, "label", "K", path, row)
    _check_indices(indices, num_features, "feature", "D", path, row)
    return labels, indices, values


_EMPTY_INT = np.zeros(0, dtype=np.int64)
_EMPTY_FLOAT = np.zeros(0, dtype=np.float64)


class _Block:
    """Rows collected for one chunk (lists of per-row arrays)."""

    def __init__(self):
        self.labels, self.indices, self.values = [], [], []

    def __len__(self) -> int:
        return len(self.labels)

    def add(self, labels, indices, values) -> None:
        self.labels.append(labels)
        self.indices.append(indices)
        self.values.append(values)

    def to_data(self, num_features: int, num_labels: int, dtype) -> MultiLabelData:
        n = len(self.labels)
        label_counts = np.fromiter((len(a) for a in self.labels), dtype=np.int64, count=n)
        feature_counts = np.fromiter((len(a) for a in self.indices), dtype=np.int64, count=n)
        rows = np.arange(n, dtype=np.int64)
        concat = lambda parts, empty: np.concatenate(parts) if parts else empty  # noqa: E731
        X = features_csr(
            np.repeat(rows, feature_counts),
            concat(self.indices, _EMPTY_INT),
            concat(self.values, _EMPTY_FLOAT),
            (n, num_features),
            dtype,
        )
        Y = labels_csr(np.repeat(rows, label_counts), concat(self.labels, _EMPTY_INT), (n, num_labels), dtype)
        return MultiLabelData(X, Y)


def iter_xmc_chunks(path: PathLike, chunk_rows: int = 10_000, dtype=np.float64) -> Iterator[MultiLabelData]:
    """Stream an XMC text file (optionally ``.gz``/``.xz``) as consecutive blocks of rows.

    Each block is a :class:`MultiLabelData` with about ``chunk_rows`` rows (a run of empty rows may
    make one longer) in canonical CSR; stacking the blocks gives :func:`read_xmc_text`. The file is
    read line by line: memory holds one block, whatever N is.

    :raises DataFormatError: as :func:`read_xmc_text` (the error for a short file comes at its end).
    """
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, (int, np.integer)) or chunk_rows < 1:
        raise ValueError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    path = as_existing_file(path, "path")
    with open_text(path) as handle:
        header = handle.readline()
        if not header:
            raise DataFormatError(f"{path}: empty file, expected the XMC header 'N D K'")
        num_data, num_features, num_labels = _parse_header(header, path)
        block, row, blank_run = _Block(), 0, 0
        for line in handle:
            line = line.rstrip("\r\n")
            if not line.strip():
                blank_run += 1  # an empty row (no label, no feature), unless only blank lines follow
                continue
            if row + blank_run >= num_data:
                raise DataFormatError(
                    f"{path}: header says N={num_data} rows but the file has more (line {row + blank_run + 2})"
                )
            for _ in range(blank_run):
                block.add(_EMPTY_INT, _EMPTY_INT, _EMPTY_FLOAT)
            row += blank_run
            blank_run = 0
            block.add(*_parse_row(line, path, row, num_features, num_labels))
            row += 1
            if len(block) >= chunk_rows:
                yield block.to_data(num_features, num_labels, dtype)
                block = _Block()
    if row != num_data:
        raise DataFormatError(f"{path}: header says N={num_data} rows but the file has {row} data rows")
    if len(block) or num_data == 0:
        yield block.to_data(num_features, num_labels, dtype)


def read_xmc_text(path: PathLike, dtype=np.float64) -> MultiLabelData:
    """Read an Extreme Classification Repository text file (optionally ``.gz``/``.xz``) into memory.

    :param path: file with header ``N D K`` and N rows ``l1,l2,... f:v f:v ...`` (0-based indices).
    :param dtype: dtype of the feature values and label entries.
    :raises DataFormatError: (a ValueError) naming the line for a bad header, a malformed token,
        a feature index >= D, a label index >= K, a negative index, or a row count different from N.
    """
    blocks = list(iter_xmc_chunks(path, chunk_rows=50_000, dtype=dtype))
    if len(blocks) == 1:
        return blocks[0]
    return MultiLabelData(
        sp.vstack([b.X for b in blocks], format="csr"), sp.vstack([b.Y for b in blocks], format="csr")
    )


def _opener(path: PathLike):
    suffix = str(path)
    return gzip.open if suffix.endswith(".gz") else lzma.open if suffix.endswith(".xz") else open


class XMCTextWriter:
    """Write an XMC text file row block by row block (constant memory); plain, ``.gz`` or ``.xz`` by suffix.

    >>> with XMCTextWriter(path, num_data=N, num_features=D, num_labels=K) as writer:  # doctest: +SKIP
    ...     writer.write(X_block, Y_block)       # CSR blocks, in row order

    The header ``N D K`` is written first; closing checks that exactly N rows were written.
    """

    def __init__(self, path: PathLike, num_data: int, num_features: int, num_labels: int, value_format: str = "{:g}"):
        self.path, self.value_format = path, value_format
        self.shape = (int(num_data), int(num_features), int(num_labels))
        self.rows = 0
        self._handle = _opener(path)(path, "wt", encoding="utf-8")
        self._handle.write(f"{self.shape[0]} {self.shape[1]} {self.shape[2]}\n")

    def write(self, X: sp.spmatrix, Y: sp.spmatrix) -> None:
        X, Y = sp.csr_matrix(X), sp.csr_matrix(Y)
        if X.shape[0] != Y.shape[0]:
            raise ValueError(f"X and Y must have the same number of rows, got {X.shape[0]} and {Y.shape[0]}")
        if X.shape[1] != self.shape[1] or Y.shape[1] != self.shape[2]:
            raise ValueError(
                f"blocks must have D={self.shape[1]} and K={self.shape[2]} columns, got {X.shape[1]}, {Y.shape[1]}"
            )
        if self.rows + X.shape[0] > self.shape[0]:
            raise ValueError(f"more than the header's N={self.shape[0]} rows written")
        fmt, lines = self.value_format, []
        for i in range(X.shape[0]):
            labels = ",".join(str(j) for j in Y.indices[Y.indptr[i] : Y.indptr[i + 1]])
            start, stop = X.indptr[i], X.indptr[i + 1]
            feats = " ".join(f"{j}:{fmt.format(v)}" for j, v in zip(X.indices[start:stop], X.data[start:stop]))
            lines.append(f"{labels} {feats}".rstrip() if labels else f" {feats}".rstrip())
        if lines:
            self._handle.write("\n".join(lines) + "\n")
        self.rows += X.shape[0]

    def close(self) -> None:
        if self._handle is None:
            return
        self._handle.close()
        self._handle = None
        if self.rows != self.shape[0]:
            raise ValueError(f"{self.path}: the header says N={self.shape[0]} rows but {self.rows} were written")

    def __enter__(self) -> "XMCTextWriter":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self.close()
        elif self._handle is not None:
            self._handle.close()
            self._handle = None


def write_xmc_text(path: PathLike, X: sp.spmatrix, Y: sp.spmatrix, value_format: str = "{:g}") -> None:
    """Write ``(X, Y)`` in the XMC text format (plain, ``.gz`` or ``.xz`` by suffix); the inverse of read_xmc_text."""
    X, Y = sp.csr_matrix(X), sp.csr_matrix(Y)
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X and Y must have the same number of rows, got {X.shape[0]} and {Y.shape[0]}")
    with XMCTextWriter(path, X.shape[0], X.shape[1], Y.shape[1], value_format) as writer:
        for start in range(0, X.shape[0], 10_000):
            writer.write(X[start : start + 10_000], Y[start : start + 10_000])


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
                raise DataFormatError(
                    f"{path}: line {number}: split files hold integers only, got {line.strip()[:80]!r}"
                ) from None
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


def load_xmc_split(
    data_path: PathLike, train_split_path: PathLike, test_split_path: PathLike, split: int = 0, dtype=np.float64
) -> tuple[MultiLabelData, MultiLabelData]:
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
