"""MovieLens 100K readers on the real files and on malformed synthetic ones."""
import numpy as np
import pytest

from gpflow_ext.data import DataFormatError, load_movielens, ratings_matrix, read_items, read_ratings, read_users
from gpflow_ext.data.movielens import SPLITS


def _table(*parts):
    """All ratings of ``parts`` as rows (user, item, rating, timestamp), sorted by (user, item)."""
    table = np.concatenate([np.stack(list(part), axis=1) for part in parts])  # [R, 4]
    return table[np.lexsort((table[:, 1], table[:, 0]))]


def test_movielens_counts_and_splits(dataset_path):
    folder = dataset_path("movielens-100k")
    data = load_movielens(folder, split=None, download=False)
    ratings = data.ratings
    assert len(ratings) == 100000
    assert len(np.unique(ratings.user)) == 943 and len(np.unique(ratings.item)) == 1682
    np.testing.assert_array_equal(np.bincount(ratings.rating)[1:], [6110, 11370, 27145, 34174, 21201])
    matrix = ratings_matrix(ratings)  # also checks that every (user, item) pair is rated once
    assert matrix.shape == (943, 1682) and matrix.nnz == 100000
    everything = _table(ratings)
    tests = []
    for split in SPLITS:
        train = read_ratings(folder / f"{split}.base.gz")
        test = read_ratings(folder / f"{split}.test.gz")
        np.testing.assert_array_equal(_table(train, test), everything)  # base + test == u.data, as multisets
        if split[1].isdigit():
            tests.append(test)
    np.testing.assert_array_equal(_table(*tests), everything)  # u1..u5.test partition u.data
    part = load_movielens(folder, split="u3", download=False)
    assert len(part.train) == 80000 and len(part.test) == 20000


def test_movielens_items_and_users(dataset_path):
    data = load_movielens(dataset_path("movielens-100k"), split=None, download=False)
    assert data.items.genres.shape == (1682, 19) and len(data.items.genre_names) == 19
    assert data.items.genre_names[0] == "unknown" and data.items.genre_names[-1] == "Western"
    assert data.items.title[0] == "Toy Story (1995)" and data.items.item.tolist() == list(range(1, 1683))
    assert data.items.genres[0, data.items.genre_names.index("Animation")] == 1
    assert len(data.users.user) == 943 and set(data.users.gender.tolist()) == {"M", "F"}
    assert data.users.age[0] == 24 and data.users.occupation[0] == "technician"


def test_movielens_plain_and_gz_read_alike(tmp_path, dataset_path):
    import gzip

    plain = tmp_path / "u1.test"
    plain.write_bytes(gzip.decompress(dataset_path("movielens-100k", "u1.test.gz").read_bytes()))
    a, b = read_ratings(plain), read_ratings(dataset_path("movielens-100k", "u1.test.gz"))
    assert len(a) == 20000 and all(np.array_equal(x, y) for x, y in zip(a, b))


def test_movielens_bad_input(tmp_path):
    bad = tmp_path / "u.data"
    bad.write_text("1\t2\t3\n")
    with pytest.raises(DataFormatError, match="line 1: expected 4 tab-separated integers"):
        read_ratings(bad)
    bad.write_text("1\t2\t7\t100\n")
    with pytest.raises(DataFormatError, match="ratings must lie in 1..5"):
        read_ratings(bad)
    items = tmp_path / "u.item"
    items.write_text("1|Toy Story|01-Jan-1995||url|0|1\n")
    with pytest.raises(DataFormatError, match="expected 24 '\\|'-separated fields"):
        read_items(items)
    users = tmp_path / "u.user"
    users.write_text("1|24|M\n")
    with pytest.raises(DataFormatError, match="id\\|age\\|gender"):
        read_users(users)
    with pytest.raises(ValueError, match="split must be one of"):
        load_movielens(tmp_path, split="u9", download=False)
    with pytest.raises(FileNotFoundError, match="movielens-100k.*not found"):
        load_movielens(tmp_path / "empty", download=False, cache_dir=tmp_path / "cache")
