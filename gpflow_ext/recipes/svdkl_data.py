"""SV-DKL's data protocols (Wilson et al. 2016): the splits, folds and preprocessing of each task.

* :func:`uci_splits`: Adult (UCI's own train/test files), Connect-4 and Covertype (a stratified 80/20 split),
  or stratified K-fold cross-validation; features standardised with training statistics.
* :func:`mnist_split`: MNIST's 60 000 / 10 000 images as float [N, 28, 28, 1] in [0, 1] (or odd vs even),
  optionally random subsets (stratified by digit).
* :func:`holdout_rows`: the airline task's uniform random hold-out; :func:`fraction_rows` the first part of
  the (permuted) training rows for Figure 2.
* :func:`validation_splits`: a stratified validation split or K folds inside a training set (choosing
  schedules); :func:`validation_rows` a random validation hold-out of a given size.

The experiment scripts (``experiments/svdkl_*.py``) are command lines over these functions and
:mod:`gpflow_ext.recipes.svdkl`; MLGPF's counterpart is :mod:`gpflow_ext.recipes.mlgpf_data`.
"""

import os
from collections.abc import Iterator

import numpy as np

from .svdkl_preprocessing import standardise

__all__ = [
    "UCI_DATASETS",
    "IMAGE_DATASETS",
    "uci_splits",
    "mnist_split",
    "holdout_rows",
    "fraction_rows",
    "validation_splits",
    "validation_rows",
]

#: the UCI tasks of the paper's Table 2 / Table 5 kept by :func:`uci_splits`
UCI_DATASETS = ("adult", "connect4", "covtype")
#: the image tasks of Table 3 / Table 6 (``mnist_binary``: odd vs even digits)
IMAGE_DATASETS = ("mnist", "mnist_binary")

Split = tuple[np.ndarray, np.ndarray]


def uci_splits(
    dataset: str, data_dir: os.PathLike | None = None, seed: int = 0, folds: int = 1, indicators: str = "keep"
) -> Iterator[tuple[Split, Split, int, str]]:
    """``(train, test, num_classes, description)`` for each split of a UCI task, features standardised with the
    training statistics (``indicators``: see :func:`~gpflow_ext.recipes.svdkl_preprocessing.standardise`).

    ``folds=1``: ``adult`` uses UCI's own train/test files (32 561 / 16 281); ``connect4`` and ``covtype`` a
    stratified 80/20 split with ``seed``. ``folds=K > 1``: stratified, shuffled K-fold cross-validation (seed
    ``seed``) over all rows (Adult's two files together).

    :param dataset: one of :data:`UCI_DATASETS`.
    :param data_dir: the data folder (default ``$GPFLOW_EXT_DATA``); nothing is downloaded.
    """
    from sklearn.model_selection import StratifiedKFold, train_test_split

    from .. import data as gdata

    if dataset not in UCI_DATASETS:
        raise ValueError(f"dataset must be one of {UCI_DATASETS}, got {dataset!r}")
    if dataset == "adult" and folds == 1:
        train, test = gdata.load_adult(data_dir, download=False)
        Xtr, Xte = standardise(train.X, test.X, indicators=indicators)
        yield (Xtr, train.y), (Xte, test.y), 2, "UCI adult.data / adult.test"
        return
    if dataset == "adult":
        train, test = gdata.load_adult(data_dir, download=False)
        X, y = np.concatenate([train.X, test.X]), np.concatenate([train.y, test.y])
    elif dataset == "connect4":
        table = gdata.load_connect4(data_dir, download=False)
        X, y = gdata.connect4_one_hot(table.X), table.y
    else:
        table = gdata.load_covtype(data_dir)
        X, y = table.X, table.y
    C = int(y.max()) + 1
    if folds == 1:
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, stratify=y, random_state=seed)
        Xtr, Xte = standardise(Xtr, Xte, indicators=indicators)
        yield (Xtr, ytr), (Xte, yte), C, f"stratified 80/20 split, seed {seed}"
        return
    for k, (tr, te) in enumerate(StratifiedKFold(folds, shuffle=True, random_state=seed).split(X, y)):
        Xtr, Xte = standardise(X[tr], X[te], indicators=indicators)
        yield (Xtr, y[tr]), (Xte, y[te]), C, f"fold {k + 1}/{folds}"


def mnist_split(
    dataset: str = "mnist",
    data_dir: os.PathLike | None = None,
    max_train: int | None = None,
    max_test: int | None = None,
    seed: int = 0,
) -> tuple[Split, Split, int]:
    """MNIST ``(train, test, num_classes)`` as float [N, 28, 28, 1] in [0, 1]; ``max_train``/``max_test`` keep
    random subsets (seed ``seed``), stratified by digit when they hold at least one image per digit (taken before
    the float copy).

    :param dataset: ``"mnist"`` (10 classes) or ``"mnist_binary"`` (odd vs even, Table 3's MNIST-Binary).
    :param data_dir: the data folder (default ``$GPFLOW_EXT_DATA``); nothing is downloaded.
    """
    from sklearn.model_selection import train_test_split

    from ..data import load_mnist

    if dataset not in IMAGE_DATASETS:
        raise ValueError(f"dataset must be one of {IMAGE_DATASETS}, got {dataset!r}")
    parts = []
    for subset, limit in (("train", max_train), ("test", max_test)):
        X, y = load_mnist(data_dir, subset, download=False)  # uint8 [N, 28, 28], labels [N]
        if limit and limit < len(X):
            stratify = y if limit >= len(np.unique(y)) else None  # fewer rows than digits: a plain random subset
            keep, _ = train_test_split(np.arange(len(X)), train_size=limit, random_state=seed, stratify=stratify)
            X, y = X[keep], y[keep]
        y = y.astype(np.int64)
        if dataset == "mnist_binary":
            y = y % 2
        parts.append(((X.astype(np.float64) / 255.0)[..., None], y))
    return parts[0], parts[1], int(parts[0][1].max()) + 1


def holdout_rows(num_rows: int, test_size: int | float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(train_rows, test_rows)``: a uniform random hold-out of ``test_size`` rows (an integer, or a fraction of
    ``num_rows`` when < 1), the training rows in random order (the airline protocol; a new hold-out per seed).

    :raises ValueError: ``test_size`` leaves one side empty.
    """
    n_test = int(round(test_size * num_rows)) if test_size < 1 else int(test_size)
    if not 0 < n_test < num_rows:
        raise ValueError(f"test_size must leave both sets non-empty, got {test_size} of {num_rows} rows")
    order = np.random.default_rng(seed).permutation(num_rows)
    return order[n_test:], order[:n_test]


def fraction_rows(train_rows: np.ndarray, fraction: float) -> np.ndarray:
    """The first ``max(2, round(fraction * len(train_rows)))`` of ``train_rows`` (already a random permutation, as
    from :func:`holdout_rows`): the training rows of Figure 2's runs on part of the data."""
    return train_rows[: max(2, int(round(fraction * len(train_rows))))]


def validation_splits(
    y: np.ndarray, folds: int = 1, validation_fraction: float = 0.2, seed: int = 0
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """``(fold, train_rows, validation_rows)`` inside a training set with labels ``y``: one stratified split holding
    out ``validation_fraction`` (``folds=1``), or stratified, shuffled ``folds``-fold cross-validation (seed ``seed``).
    """
    from sklearn.model_selection import StratifiedKFold, train_test_split

    if folds == 1:
        train, validation = train_test_split(
            np.arange(len(y)), test_size=validation_fraction, stratify=y, random_state=seed
        )
        yield 0, train, validation
        return
    placeholder = np.zeros((len(y), 1))  # StratifiedKFold looks only at the number of rows of X
    for fold, (train, validation) in enumerate(
        StratifiedKFold(folds, shuffle=True, random_state=seed).split(placeholder, y)
    ):
        yield fold, train, validation


def validation_rows(num_rows: int, validation_size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(train_rows, validation_rows)``: ``validation_size`` rows held out uniformly at random (seed ``seed``).

    :raises ValueError: ``validation_size`` is not in (0, ``num_rows``).
    """
    if not 0 < validation_size < num_rows:
        raise ValueError(f"validation_size must be in (0, {num_rows}), got {validation_size}")
    order = np.random.default_rng(seed).permutation(num_rows)
    return order[validation_size:], order[:validation_size]
