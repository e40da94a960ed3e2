"""Readers for the real dataset formats, a verified download path, and one loader per dataset.

``load_bibtex``, ``load_movielens``, ``load_mnist``, ``load_adult``, ``load_connect4``, ``load_airline`` look in
``data_dir`` (default ``$GPFLOW_EXT_DATA``), then the cache (``gpflow_ext.config.cache_dir()``), then
download the public originals with checksum checks. ``load_digits`` needs no download at all;
``load_diabetes``, ``load_covtype`` and ``load_multilabel`` read local files only. Every loader finds its
files through :func:`locate`; the multi-label readers live in :mod:`gpflow_ext.data.multilabel`.
All return numpy arrays or ``scipy.sparse.csr_matrix`` (sparse data is never densified).
"""

from . import digits, loaders, mnist, movielens, multilabel, uci
from ._io import DataFormatError, locate
from .airline import AirlineData, load_airline, read_airline
from .covtype import load_covtype, read_covtype
from .diabetes import DiabetesData, diabetes_folds, load_diabetes
from .digits import ClassificationSplit, load_digits
from .download import (  # the function download(name, ...)
    REGISTRY,
    ChecksumError,
    RemoteFile,
    dataset_folder,
    download,
    verify_file,
)
from .loaders import (
    MULTILABEL_FILE_NAMES,
    MovieLens,
    load_adult,
    load_bibtex,
    load_connect4,
    load_mnist,
    load_movielens,
    load_multilabel,
)
from .mnist import downscale, read_idx, read_mnist_csv, read_mnist_images, read_mnist_labels
from .movielens import Items, Ratings, Users, ratings_matrix, read_genres, read_items, read_ratings, read_users
from .multilabel import (
    MultiLabelData,
    XMCTextSource,
    XMCTextWriter,
    XMCTFRecordSource,
    iter_xmc_chunks,
    load_xmc_split,
    read_mulan_arff,
    read_mulan_labels,
    read_xmc_header,
    read_xmc_split,
    read_xmc_text,
    write_xmc_text,
    write_xmc_tfrecords,
)
from .uci import TabularData, connect4_one_hot, read_adult, read_connect4_pmlb, read_connect4_uci

__all__ = [
    "DataFormatError",
    "ClassificationSplit",
    "load_digits",
    "REGISTRY",
    "ChecksumError",
    "RemoteFile",
    "dataset_folder",
    "download",
    "verify_file",
    "MovieLens",
    "load_adult",
    "load_bibtex",
    "load_connect4",
    "load_mnist",
    "load_movielens",
    "load_multilabel",
    "locate",
    "MULTILABEL_FILE_NAMES",
    "downscale",
    "read_idx",
    "read_mnist_csv",
    "read_mnist_images",
    "read_mnist_labels",
    "Items",
    "Ratings",
    "Users",
    "ratings_matrix",
    "read_genres",
    "read_items",
    "read_ratings",
    "read_users",
    "TabularData",
    "connect4_one_hot",
    "read_adult",
    "read_connect4_pmlb",
    "read_connect4_uci",
    "MultiLabelData",
    "load_xmc_split",
    "read_mulan_arff",
    "read_mulan_labels",
    "read_xmc_split",
    "read_xmc_text",
    "write_xmc_text",
    "load_covtype",
    "read_covtype",
    "DiabetesData",
    "diabetes_folds",
    "load_diabetes",
    "AirlineData",
    "load_airline",
    "read_airline",
    "XMCTextSource",
    "XMCTFRecordSource",
    "iter_xmc_chunks",
    "read_xmc_header",
    "write_xmc_tfrecords",
    "XMCTextWriter",
    "digits",
    "loaders",
    "mnist",
    "movielens",
    "multilabel",
    "uci",
]
