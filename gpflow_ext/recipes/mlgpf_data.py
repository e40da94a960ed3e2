"""Multi-label data for the MLGPF recipes: :func:`load_xmc` reads a dataset under any of its published
file names; :func:`load_training_file` reads only its training file (for choosing settings);
:func:`synthetic_multilabel` is the no-download tour problem. :func:`load_xmc` and :func:`synthetic_multilabel`
are re-exported by :mod:`gpflow_ext.recipes.mlgpf`."""
from pathlib import Path
from typing import Dict, Optional, Tuple, Union

import numpy as np
import scipy.sparse

__all__ = ["DATASET_FILE_NAMES", "load_xmc", "load_training_file", "synthetic_multilabel"]

#: File-name stems of each dataset as distributed (Mulan / Extreme Classification Repository).
DATASET_FILE_NAMES: Dict[str, Tuple[str, ...]] = {
    "eurlex": ("eurlex", "Eurlex", "EUR-Lex"),
    "rcv1": ("rcv1", "RCV1-x", "rcv1x"),
    "amazoncat": ("amazoncat", "AmazonCat-13K", "AmazonCat"),
}


def load_xmc(dataset: str, data_dir: Optional[Union[str, Path]] = None, max_rows: Optional[int] = None):
    """``((X_train, Y_train), (X_test, Y_test))`` as CSR matrices through :func:`gpflow_ext.data.load_multilabel`,
    trying each published file name of ``dataset`` (:data:`DATASET_FILE_NAMES`); ``max_rows`` keeps only the
    first rows of each split (smoke runs).

    :raises FileNotFoundError: none of the names was found (the message lists every attempt).
    """
    from ..data import load_multilabel

    errors = []
    for name in DATASET_FILE_NAMES.get(dataset, (dataset,)):
        try:
            train, test = load_multilabel(name, data_dir)
        except FileNotFoundError as error:
            errors.append(str(error))
            continue
        rows = slice(max_rows or None)
        return (train.X[rows], train.Y[rows]), (test.X[rows], test.Y[rows])
    raise FileNotFoundError("; ".join(errors))


def load_training_file(dataset: str, data_dir: Optional[Union[str, Path]] = None, max_rows: Optional[int] = None):
    """``(X_train, Y_train)`` (CSR) of ``dataset`` read from its training file alone: the test file is neither
    opened nor required to exist (Mulan ``NAME-train.arff`` + ``NAME.xml``; XMC ``NAME_train.txt``,
    ``NAME_train.xmc.txt`` or ``train.txt``). A dataset stored as one data file with split files holds both
    splits in that file; its training rows are taken through :func:`load_xmc`. Same names and folders as
    :func:`load_xmc`; ``max_rows`` keeps the first rows.

    :raises FileNotFoundError: no training file under any of the dataset's names."""
    from .. import config
    from ..data.loaders import _find_case_insensitive
    from ..data.xmc import read_mulan_arff, read_xmc_text

    if data_dir is not None:
        roots = [Path(data_dir).expanduser()]
    else:
        roots = [config.data_dir()] if config.data_dir() else []
    rows = slice(max_rows or None)
    for name in DATASET_FILE_NAMES.get(dataset, (dataset,)):
        for folder in (folder for root in roots for folder in (root / name, root)):
            train = _find_case_insensitive(folder, [f"{name}-train.arff"])
            xml = _find_case_insensitive(folder, [f"{name}.xml"])
            if train and xml:
                data = read_mulan_arff(train, xml)
                return data.X[rows], data.Y[rows]
            for train_name in (f"{name}_train.txt", f"{name}_train.xmc.txt", "train.txt"):
                train = _find_case_insensitive(folder, [train_name])
                if train:
                    data = read_xmc_text(train)
                    return data.X[rows], data.Y[rows]
    (X, Y), _ = load_xmc(dataset, data_dir, max_rows)
    return X, Y


def synthetic_multilabel(num_rows: int = 2500, num_features: int = 300, num_labels: int = 50, seed: int = 0):
    """The tour's problem, no download: sparse binary bag-of-words rows (~5 % of the words each) whose 3
    labels are the top scores of a rank-8 linear map of the words, which MLGPF's factor model (linear
    kernel, Φ, b) can express. Returns ``((X, Y) train, (X, Y) test)``, the last fifth of the rows as test."""
    rng = np.random.default_rng(seed)
    X = scipy.sparse.random(num_rows, num_features, density=0.05, format="csr", random_state=seed)
    X.data[:] = 1.0
    scores = X @ rng.normal(size=(num_features, 8)) @ rng.normal(size=(8, num_labels))  # [N, K]
    top = np.argsort(-scores, axis=1)[:, :3]  # [N, 3]
    Y = scipy.sparse.csr_matrix(
        (np.ones(top.size), (np.repeat(np.arange(num_rows), 3), top.ravel())), shape=(num_rows, num_labels)
    )
    split = num_rows * 4 // 5
    return (X[:split], Y[:split]), (X[split:], Y[split:])
