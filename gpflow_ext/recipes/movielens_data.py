"""MovieLens data protocols for GPLVF (paper Section 4.2): per-row rating splits, the held-out user split, the
Sci-Fi/Romance slice, the user/item-bias baseline and centring on its residuals, and the RMSE of clipped ratings."""

import numpy as np
import scipy.sparse as sp

__all__ = [
    "RATING_RANGE",
    "SMALL_USERS",
    "SMALL_ITEMS",
    "dense_with_nan",
    "split_rows",
    "small_slice",
    "rmse",
    "fit_biases",
    "row_biases",
    "subtract_biases",
    "bias_baseline",
    "centre",
    "split_users",
]


RATING_RANGE = (1.0, 5.0)


SMALL_USERS, SMALL_ITEMS = 60, 80


def dense_with_nan(matrix: sp.csr_matrix) -> np.ndarray:
    """Observed entries of a CSR matrix as a dense array with NaN where missing (no imputation)."""
    matrix = sp.csr_matrix(matrix)
    out = np.full(matrix.shape, np.nan)
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    out[rows, matrix.indices] = matrix.data
    return out


def split_rows(matrix: sp.csr_matrix, fraction: float, rng) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Per row: a random ``fraction`` of its entries (at least 1, at most all but 1) -> observed, the rest -> target."""
    matrix = sp.csr_matrix(matrix)
    keep_rows, keep_cols, keep_vals, tgt_rows, tgt_cols, tgt_vals = [], [], [], [], [], []
    for r in range(matrix.shape[0]):
        cols = matrix.indices[matrix.indptr[r] : matrix.indptr[r + 1]]
        vals = matrix.data[matrix.indptr[r] : matrix.indptr[r + 1]]
        if len(cols) == 0:
            continue
        order = rng.permutation(len(cols))
        n_keep = max(1, int(round(fraction * len(cols))))
        if len(cols) > 1:
            n_keep = min(n_keep, len(cols) - 1)
        k, t = order[:n_keep], order[n_keep:]
        keep_rows += [r] * len(k)
        keep_cols += list(cols[k])
        keep_vals += list(vals[k])
        tgt_rows += [r] * len(t)
        tgt_cols += list(cols[t])
        tgt_vals += list(vals[t])
    shape = matrix.shape
    return (
        sp.csr_matrix((keep_vals, (keep_rows, keep_cols)), shape=shape),
        sp.csr_matrix((tgt_vals, (tgt_rows, tgt_cols)), shape=shape),
    )


def small_slice(matrix: sp.csr_matrix, num_users=SMALL_USERS, num_items=SMALL_ITEMS) -> sp.csr_matrix:
    """The most active users x the most rated items (for quick runs)."""
    matrix = sp.csr_matrix(matrix)
    items = np.argsort(-np.diff(matrix.tocsc().indptr))[:num_items]
    sub = matrix[:, np.sort(items)]
    users = np.argsort(-np.diff(sub.indptr))[:num_users]
    return sp.csr_matrix(sub[np.sort(users)])


def rmse(pred: np.ndarray, target: np.ndarray) -> float:
    """Root mean squared difference of ``pred`` and ``target``."""
    return float(np.sqrt(np.mean((pred - target) ** 2)))


def fit_biases(train: sp.csr_matrix, reg: float = 5.0, iters: int = 20) -> tuple[float, np.ndarray, np.ndarray]:
    """(mu, b_u [rows], b_i [cols]) of mu + b_u + b_i by alternating regularised least squares on the observed entries."""
    train = sp.coo_matrix(train)
    mu = float(train.data.mean())
    b_u = np.zeros(train.shape[0])
    b_i = np.zeros(train.shape[1])
    for _ in range(iters):
        b_u = row_biases(train, mu, b_i, reg)  # rows given the columns
        b_i = row_biases(train.T, mu, b_u, reg)  # columns given the rows
    return mu, b_u, b_i


def row_biases(observed: sp.csr_matrix, mu: float, b_i: np.ndarray, reg: float = 5.0) -> np.ndarray:
    """Row biases from the observed entries with mu and the column biases ``b_i`` fixed (one alternating
    least-squares half-step of :func:`fit_biases`; new users' b_u in protocols a/c)."""
    observed = sp.coo_matrix(observed)
    counts = np.bincount(observed.row, minlength=observed.shape[0])
    return np.bincount(observed.row, observed.data - mu - b_i[observed.col], observed.shape[0]) / (counts + reg)


def subtract_biases(matrix: sp.csr_matrix, mu: float, b_u: np.ndarray, b_i: np.ndarray) -> sp.csr_matrix:
    """The observed entries minus mu + b_u[row] + b_i[col], same sparsity pattern."""
    m = sp.coo_matrix(matrix)
    return sp.csr_matrix((m.data - mu - b_u[m.row] - b_i[m.col], (m.row, m.col)), shape=m.shape)


def bias_baseline(train: sp.csr_matrix, target: sp.csr_matrix, reg: float = 5.0, iters: int = 20) -> dict[str, float]:
    """RMSE of mu + b_u + b_i fitted by alternating regularised least squares on the observed entries."""
    mu, b_u, b_i = fit_biases(train, reg, iters)
    t = sp.coo_matrix(target)
    pred = mu + b_u[t.row] + b_i[t.col]
    return {
        "rmse": rmse(np.clip(pred, *RATING_RANGE), t.data),
        "rmse_unclipped": rmse(pred, t.data),
        "num_test": int(t.nnz),
    }


def centre(train: sp.csr_matrix, new_rows: sp.csr_matrix | None, how: str):
    """(what GPLVF trains on, what it conditions on for ``new_rows``, biases for :func:`evaluate_at` on new rows).

    ``how="bias"``: residuals of mu + b_u + b_i fitted on ``train``; new rows get b_u from their own observed
    entries (:func:`row_biases`). ``how="none"``: the ratings as they are. ``how="classes"``: rating r as the
    class r - 1 (0..4, for an ordinal likelihood; the biases are then (1, 0, 0))."""
    if how == "none":
        return train, new_rows, None
    if how == "classes":
        items = np.zeros(train.shape[1])

        def classes(matrix):
            return subtract_biases(matrix, 1.0, np.zeros(matrix.shape[0]), items)

        shift = (1.0, np.zeros((train if new_rows is None else new_rows).shape[0]), items)
        return classes(train), None if new_rows is None else classes(new_rows), shift
    if how != "bias":
        raise ValueError(f"center must be 'bias', 'none' or 'classes', got {how!r}")
    mu, b_u, b_i = fit_biases(train)
    if new_rows is None:  # predict at the training rows themselves (protocol b)
        return subtract_biases(train, mu, b_u, b_i), None, (mu, b_u, b_i)
    b_new = row_biases(new_rows, mu, b_i)
    return subtract_biases(train, mu, b_u, b_i), subtract_biases(new_rows, mu, b_new, b_i), (mu, b_new, b_i)


def split_users(
    num_users: int,
    num_test_users: int,
    seed: int,
    num_validation_users: int | None = None,
    test_users: str = "random",
) -> tuple[np.ndarray, np.ndarray, np.random.Generator]:
    """(training users, held-out users, generator for the held-out users' rating split) of protocol (a).

    ``test_users="random"``: the first ``num_test_users`` of a permutation drawn with ``seed``; ``"last"``: the
    last ``num_test_users`` rows (MovieLens user ids 844-943 for 100 of 943). ``num_validation_users=None``:
    held-out = the test users. Otherwise held-out = ``num_validation_users`` of the *training* users (drawn by a
    second generator, so the test split is the same with and without validation): the test users appear in neither."""
    for arg, value in (("num_test_users", num_test_users), ("num_validation_users", num_validation_users)):
        if value is not None and (not isinstance(value, (int, np.integer)) or value < 1):
            raise ValueError(f"{arg} must be a positive integer, got {value!r}")
    num_train = num_users - num_test_users - (num_validation_users or 0)
    if num_train < 1:
        raise ValueError(
            f"num_test_users={num_test_users} + num_validation_users={num_validation_users} leave no training "
            f"users out of {num_users}"
        )
    if test_users not in ("random", "last"):
        raise ValueError(f"test_users must be 'random' or 'last', got {test_users!r}")
    rng = np.random.default_rng(seed)
    users = rng.permutation(num_users) if test_users == "random" else np.arange(num_users)[::-1]
    test_ids, train_users = np.sort(users[:num_test_users]), np.sort(users[num_test_users:])
    if num_validation_users is None:
        return train_users, test_ids, rng
    validation_rng = np.random.default_rng([seed, 1])
    shuffled = validation_rng.permutation(train_users)
    return np.sort(shuffled[num_validation_users:]), np.sort(shuffled[:num_validation_users]), rng
