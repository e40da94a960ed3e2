"""MovieLens 100K readers (the original ``ml-100k`` files, plain or ``.gz``).

* ``u.data`` and the split files ``u1..u5.{base,test}``, ``ua/ub.{base,test}``: tab-separated
  ``user item rating timestamp`` with 1-based user/item ids (943 users, 1682 items).
* ``u.item``: ``|``-separated, latin-1: id, title, release date, video release date, IMDb URL, 19 genre flags.
* ``u.genre``: ``name|index`` (19 genres); ``u.user``: ``id|age|gender|occupation|zip``.
"""

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ._io import DataFormatError, PathLike, as_existing_file, open_text

__all__ = [
    "Ratings",
    "Items",
    "Users",
    "read_ratings",
    "read_items",
    "read_genres",
    "read_users",
    "ratings_matrix",
    "SPLITS",
    "NUM_USERS",
    "NUM_ITEMS",
]

NUM_USERS = 943
NUM_ITEMS = 1682
SPLITS = ("u1", "u2", "u3", "u4", "u5", "ua", "ub")
GENRES = (
    "unknown",
    "Action",
    "Adventure",
    "Animation",
    "Children's",
    "Comedy",
    "Crime",
    "Documentary",
    "Drama",
    "Fantasy",
    "Film-Noir",
    "Horror",
    "Musical",
    "Mystery",
    "Romance",
    "Sci-Fi",
    "Thriller",
    "War",
    "Western",
)


class Ratings(NamedTuple):
    """One rating per entry; ``user``/``item`` are the file's 1-based ids."""

    user: np.ndarray  # [R] int64
    item: np.ndarray  # [R] int64
    rating: np.ndarray  # [R] int64 in 1..5
    timestamp: np.ndarray  # [R] int64, unix seconds

    def __len__(self) -> int:
        return len(self.rating)


class Items(NamedTuple):
    item: np.ndarray  # [I] int64, 1-based id
    title: list[str]
    release_date: list[str]
    genres: np.ndarray  # [I, 19] int8 flags, columns in u.genre order
    genre_names: list[str]


class Users(NamedTuple):
    user: np.ndarray  # [U] int64, 1-based id
    age: np.ndarray  # [U] int64
    gender: np.ndarray  # [U] str, "M"/"F"
    occupation: np.ndarray  # [U] str
    zip_code: np.ndarray  # [U] str


def read_ratings(path: PathLike) -> Ratings:
    """Read ``u.data`` or a split file (tab-separated ``user item rating timestamp``)."""
    path = as_existing_file(path, "path")
    with open_text(path) as handle:
        text = handle.read()
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        raise DataFormatError(f"{path}: no ratings found")
    try:
        table = np.array([line.split("\t") for line in lines], dtype=np.int64)
        well_formed = table.ndim == 2 and table.shape[1] == 4
    except ValueError:
        well_formed = False
    if not well_formed:
        for number, line in enumerate(lines, start=1):
            fields = line.split("\t")
            if len(fields) != 4 or not all(field.strip().lstrip("-").isdigit() for field in fields):
                raise DataFormatError(
                    f"{path}: line {number}: expected 4 tab-separated integers 'user item rating timestamp', got {line[:80]!r}"
                )
        raise DataFormatError(f"{path}: expected rows of 4 tab-separated integers 'user item rating timestamp'")
    user, item, rating, timestamp = table.T
    if user.min() < 1 or item.min() < 1:
        raise DataFormatError(f"{path}: user and item ids are 1-based, found {min(user.min(), item.min())}")
    if rating.min() < 1 or rating.max() > 5:
        raise DataFormatError(f"{path}: ratings must lie in 1..5, found {rating.min()}..{rating.max()}")
    return Ratings(user.copy(), item.copy(), rating.copy(), timestamp.copy())


def ratings_matrix(
    ratings: Ratings, num_users: int = NUM_USERS, num_items: int = NUM_ITEMS, dtype=np.float64
) -> sp.csr_matrix:
    """CSR [num_users, num_items] with entry (u-1, i-1) = rating; absent entries are *missing*, not zero."""
    if ratings.user.max() > num_users or ratings.item.max() > num_items:
        raise ValueError(
            f"ratings refer to user {ratings.user.max()} / item {ratings.item.max()} beyond num_users={num_users}, "
            f"num_items={num_items}"
        )
    matrix = sp.csr_matrix(
        (ratings.rating.astype(dtype), (ratings.user - 1, ratings.item - 1)), shape=(num_users, num_items)
    )
    if matrix.nnz != len(ratings):
        raise ValueError("ratings contain the same (user, item) pair more than once")
    return matrix


def read_genres(path: PathLike) -> list[str]:
    """Genre names from ``u.genre`` in index order."""
    path = as_existing_file(path, "path")
    pairs = []
    with open_text(path, encoding="latin-1") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            name, sep, index = line.strip().rpartition("|")
            if not sep or not index.isdigit():
                raise DataFormatError(f"{path}: line {number}: expected 'name|index', got {line.strip()!r}")
            pairs.append((int(index), name))
    return [name for _, name in sorted(pairs)]


def _pipe_separated_lines(path):
    """(line number, line, ``|``-separated fields) of each non-empty line of a latin-1 MovieLens file."""
    with open_text(path, encoding="latin-1") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if line:
                yield number, line, line.split("|")


def read_items(path: PathLike, genre_names: list[str] | None = None) -> Items:
    """Read ``u.item`` (latin-1, ``|``-separated): ids, titles, release dates and the [I, 19] genre flags."""
    path = as_existing_file(path, "path")
    genre_names = list(GENRES if genre_names is None else genre_names)
    ids, titles, dates, genres = [], [], [], []
    for number, _line, fields in _pipe_separated_lines(path):
        if len(fields) != 5 + len(genre_names):
            raise DataFormatError(
                f"{path}: line {number}: expected {5 + len(genre_names)} '|'-separated fields "
                f"(id, title, date, video date, URL, {len(genre_names)} genre flags), got {len(fields)}"
            )
        try:
            ids.append(int(fields[0]))
            genres.append([int(flag) for flag in fields[5:]])
        except ValueError:
            raise DataFormatError(f"{path}: line {number}: id and genre flags must be integers") from None
        titles.append(fields[1])
        dates.append(fields[2])
    return Items(np.array(ids, dtype=np.int64), titles, dates, np.array(genres, dtype=np.int8), genre_names)


def read_users(path: PathLike) -> Users:
    """Read ``u.user`` (``id|age|gender|occupation|zip``)."""
    path = as_existing_file(path, "path")
    rows = []
    for number, line, fields in _pipe_separated_lines(path):
        if len(fields) != 5 or not fields[0].isdigit() or not fields[1].isdigit():
            raise DataFormatError(f"{path}: line {number}: expected 'id|age|gender|occupation|zip', got {line[:80]!r}")
        rows.append(fields)
    if not rows:
        raise DataFormatError(f"{path}: no users found")
    columns = list(zip(*rows))
    return Users(
        np.array(columns[0], dtype=np.int64),
        np.array(columns[1], dtype=np.int64),
        np.array(columns[2]),
        np.array(columns[3]),
        np.array(columns[4]),
    )
