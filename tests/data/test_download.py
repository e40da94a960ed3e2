"""download(): public URLs + checksums, served here by a local HTTP server on 127.0.0.1 from copies
of the shared files; then the loaders work from the cache with no server at all."""
import dataclasses
import functools
import gzip
import http.server
import io
import tarfile
import threading
import zipfile

import numpy as np
import pytest

from gpflow_ext import config
from gpflow_ext.data import (
    REGISTRY,
    ChecksumError,
    download,
    load_adult,
    load_bibtex,
    load_connect4,
    load_mnist,
    load_movielens,
)


class _Server:
    def __init__(self, folder):
        self.requests = []
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                server.requests.append(self.path)
                super().do_GET()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def served(tmp_path):
    folder = tmp_path / "served"
    folder.mkdir()
    server = _Server(folder)
    yield folder, server
    server.close()


def _copy(source, target):
    target.write_bytes(source.read_bytes())


def test_registry_is_complete():
    assert set(REGISTRY) == {"bibtex", "movielens-100k", "mnist", "adult", "connect-4", "airline"}
    for _name, files in REGISTRY.items():
        for remote in files:
            assert remote.url.startswith("https://"), remote
            # every file is checked by at least one hash
            assert remote.sha256 or remote.md5 or remote.content_sha256 or remote.member_sha256, remote
    with pytest.raises(ValueError, match="unknown dataset 'cifar'"):
        download("cifar", base_url="http://127.0.0.1:9")


def test_download_adult_verifies_then_loads_from_cache(served, dataset_path, tmp_path, monkeypatch):
    folder, server = served
    data = gzip.decompress(dataset_path("adult", "adult.data.gz").read_bytes())
    test = gzip.decompress(dataset_path("adult", "adult.test.gz").read_bytes()).decode()
    (folder / "adult.data").write_bytes(data)
    # UCI's original adult.test: '|' comment line and a final blank line (its published md5 is in the registry)
    (folder / "adult.test").write_text("|1x3 Cross validator\n" + test.split("\n", 1)[1] + "\n")
    cache = tmp_path / "cache"
    monkeypatch.setenv(config.CACHE_ENV, str(cache))
    monkeypatch.delenv(config.DATA_ENV, raising=False)
    train, test_data = load_adult(base_url=server.url)  # not in any data_dir, not cached: downloaded
    assert sorted(server.requests) == ["/adult.data", "/adult.test"]
    assert train.X.shape == (32561, 108) and test_data.X.shape == (16281, 108)
    assert sorted(p.name for p in (cache / "adult").iterdir()) == ["adult.data", "adult.test"]
    server.close()  # the same loader now works from the cache alone
    again_train, _ = load_adult(data_dir=tmp_path / "nowhere")
    np.testing.assert_array_equal(again_train.X, train.X)
    assert len(server.requests) == 2


def test_corrupted_download_raises_checksum_error(served, dataset_path, tmp_path):
    folder, server = served
    content = bytearray(dataset_path("connect-4", "connect_4.pmlb.tsv.gz").read_bytes())
    content[1000] ^= 0xFF
    (folder / "connect_4.tsv.gz").write_bytes(bytes(content))
    cache = tmp_path / "cache"
    with pytest.raises(ChecksumError, match="connect_4.pmlb.tsv.gz: sha256 mismatch .*expected e283074e"):
        download("connect-4", cache_dir=cache, base_url=server.url)
    assert list((cache / "connect-4").iterdir()) == []  # nothing corrupt is kept
    with pytest.raises(ChecksumError):
        load_connect4(data_dir=tmp_path / "nowhere", cache_dir=cache, base_url=server.url)


def test_corrupted_cache_is_fetched_again(served, dataset_path, tmp_path):
    folder, server = served
    _copy(dataset_path("connect-4", "connect_4.pmlb.tsv.gz"), folder / "connect_4.tsv.gz")
    cache = tmp_path / "cache"
    target = download("connect-4", cache_dir=cache, base_url=server.url) / "connect_4.pmlb.tsv.gz"
    assert len(server.requests) == 1
    download("connect-4", cache_dir=cache, base_url=server.url)  # verified cache: no request
    assert len(server.requests) == 1
    target.write_bytes(b"garbage")
    download("connect-4", cache_dir=cache, base_url=server.url)
    assert len(server.requests) == 2
    data = load_connect4(data_dir=tmp_path / "nowhere", cache_dir=cache, download=False)
    assert data.X.shape == (67557, 42)


def test_download_mnist_idx_files(served, dataset_path, tmp_path):
    folder, server = served
    # the t10k files and train labels here are byte-identical to the official .gz (same sha256 and md5)
    names = ["t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", "train-labels-idx1-ubyte.gz"]
    for name in names:
        _copy(dataset_path("mnist", name), folder / name)
    registry = {"mnist": tuple(r for r in REGISTRY["mnist"] if r.name in names)}
    cache = tmp_path / "cache"
    download("mnist", cache_dir=cache, base_url=server.url, registry=registry)
    images, labels = load_mnist(data_dir=tmp_path / "nowhere", subset="test", cache_dir=cache, download=False)
    assert images.shape == (10000, 28, 28) and len(labels) == 10000
    cached = cache / "mnist" / "t10k-labels-idx1-ubyte.gz"
    cached.write_bytes(b"not gzip")  # damaged cache entry: fetched again
    download("mnist", cache_dir=cache, base_url=server.url, registry=registry)
    assert server.requests.count("/t10k-labels-idx1-ubyte.gz") == 2
    # shared/data's train images were re-gzipped, so their .gz fails the official md5 -- as it must
    train = [r for r in REGISTRY["mnist"] if r.name == "train-images-idx3-ubyte.gz"]
    _copy(dataset_path("mnist", "train-images-idx3-ubyte.gz"), folder / "train-images-idx3-ubyte.gz")
    with pytest.raises(ChecksumError, match="md5 mismatch.*expected f68b3c2d"):
        download("mnist", cache_dir=cache, base_url=server.url, registry={"mnist": tuple(train)})
    # ...while the uncompressed content check alone accepts it
    content_only = {"mnist": (dataclasses.replace(train[0], md5=None),)}
    download("mnist", cache_dir=cache, base_url=server.url, registry=content_only)
    (cache / "mnist" / "train-images-idx3-ubyte.gz").write_bytes(b"not gzip")  # undecompressable: fetched again
    download("mnist", cache_dir=cache, base_url=server.url, registry=content_only)
    assert server.requests.count("/train-images-idx3-ubyte.gz") == 3


def _archive_registry(name):
    """The registry entries of ``name`` with the archive's own hash dropped: an archive rebuilt here from
    the shared copies cannot be byte-identical to the public one, but its members' content hashes are real."""
    return {name: tuple(dataclasses.replace(r, sha256=None, md5=None) for r in REGISTRY[name])}


def test_download_movielens_zip_members_verified(served, dataset_path, tmp_path):
    folder, server = served
    source = dataset_path("movielens-100k")
    with zipfile.ZipFile(folder / "ml-100k.zip", "w") as bundle:
        for remote in REGISTRY["movielens-100k"]:
            path = source / remote.name if (source / remote.name).exists() else source / (remote.name + ".gz")
            raw = path.read_bytes()
            bundle.writestr(remote.member, gzip.decompress(raw) if path.suffix == ".gz" else raw)
    cache = tmp_path / "cache"
    download("movielens-100k", cache_dir=cache, base_url=server.url, registry=_archive_registry("movielens-100k"))
    assert server.requests == ["/ml-100k.zip"]  # one archive for all members
    data = load_movielens(data_dir=tmp_path / "nowhere", split="ua", cache_dir=cache, download=False)
    assert len(data.ratings) == 100000 and len(data.train) + len(data.test) == 100000
    # a member with altered content is rejected by its content hash
    with zipfile.ZipFile(folder / "ml-100k.zip", "w") as bundle:
        for remote in REGISTRY["movielens-100k"]:
            bundle.writestr(remote.member, b"1\t1\t5\t0\n")
    with pytest.raises(ChecksumError, match="content of u.data: sha256 mismatch.*expected 06416e59"):
        download("movielens-100k", cache_dir=tmp_path / "cache2", base_url=server.url,
                 registry=_archive_registry("movielens-100k"))


def test_download_bibtex_from_sdist_archive(served, dataset_path, tmp_path):
    folder, server = served
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as bundle:
        for remote in REGISTRY["bibtex"]:
            path = dataset_path("bibtex", remote.name if remote.name.endswith(".xml") else remote.name + ".gz")
            raw = path.read_bytes()
            raw = gzip.decompress(raw) if path.suffix == ".gz" else raw
            info = tarfile.TarInfo("structured-predictions-0.1.3/" + remote.member)
            info.size = len(raw)
            bundle.addfile(info, io.BytesIO(raw))
    (folder / "structured-predictions-0.1.3.tar.gz").write_bytes(buffer.getvalue())
    cache = tmp_path / "cache"
    download("bibtex", cache_dir=cache, base_url=server.url, registry=_archive_registry("bibtex"))
    train, test = load_bibtex(data_dir=tmp_path / "nowhere", cache_dir=cache, download=False)
    assert train.X.shape == (4880, 1836) and test.Y.shape == (2515, 159)
    # with the real registry, the rebuilt archive fails the sdist's sha256
    with pytest.raises(ChecksumError, match="archive for bibtex-train.arff: sha256 mismatch.*30f39395"):
        download("bibtex", cache_dir=tmp_path / "cache2", base_url=server.url)


def test_missing_everywhere_without_download(tmp_path):
    with pytest.raises(FileNotFoundError, match="'adult'.*not found.*pass download=True"):
        load_adult(data_dir=tmp_path / "nowhere", cache_dir=tmp_path / "cache", download=False)
