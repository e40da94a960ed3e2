"""The multi-label container shared by the XMC text and Mulan readers, and its CSR helpers."""

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

__all__ = ["MultiLabelData", "select_rows"]


class MultiLabelData(NamedTuple):
    """Features ``X`` (CSR [N, D]) and labels ``Y`` (CSR [N, K], entries 1.0); names when the format has them."""

    X: sp.csr_matrix
    Y: sp.csr_matrix
    feature_names: list[str] | None = None
    label_names: list[str] | None = None

    @property
    def num_data(self) -> int:
        return self.X.shape[0]

    @property
    def num_features(self) -> int:
        return self.X.shape[1]

    @property
    def num_labels(self) -> int:
        return self.Y.shape[1]


def labels_csr(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int], dtype) -> sp.csr_matrix:
    """0/1 CSR labels from (row, column) pairs; a label listed twice is still one label."""
    Y = sp.csr_matrix((np.ones(len(rows), dtype=dtype), (rows, cols)), shape=shape)
    Y.sum_duplicates()
    Y.data[:] = 1
    return Y


def features_csr(rows, cols, values, shape, dtype) -> sp.csr_matrix:
    """Canonical CSR features (sorted columns; a feature listed twice in a row is summed)."""
    X = sp.csr_matrix((np.asarray(values, dtype=dtype), (rows, cols)), shape=shape)
    X.sum_duplicates()
    return X


def select_rows(data: MultiLabelData, rows: np.ndarray) -> MultiLabelData:
    """The rows ``rows`` of ``data`` (CSR row slicing; names kept)."""
    rows = np.asarray(rows)
    if rows.ndim != 1:
        raise ValueError(f"rows must be a 1-D index array, got shape {rows.shape}")
    if rows.size and (rows.min() < 0 or rows.max() >= data.num_data):
        raise ValueError(
            f"row index {rows.max() if rows.max() >= data.num_data else rows.min()} out of range for N={data.num_data}"
        )
    return MultiLabelData(data.X[rows], data.Y[rows], data.feature_names, data.label_names)
