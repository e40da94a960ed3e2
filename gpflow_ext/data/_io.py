"""Small file helpers shared by the readers: transparent ``.gz``/``.xz`` opening and :func:`locate`, the one
place where dataset files are looked for.

Files opened here never let a bare decompression or decoding exception escape: a truncated ``.gz``
(``EOFError``), a plain file named ``.gz`` (``gzip.BadGzipFile``), corrupt deflate data (``zlib.error``),
a truncated or non-xz ``.xz`` (``EOFError`` / ``lzma.LZMAError``) and bytes that are not valid in the
text encoding (``UnicodeDecodeError``) all become ``DataFormatError`` naming the file and, for text, the line.
"""

import codecs
import gzip
import lzma
import os
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Literal, TypeAlias, overload

from .. import config
from .download import REGISTRY
from .download import download as download_dataset

PathLike: TypeAlias = str | os.PathLike
COMPRESSED_SUFFIXES = (".gz", ".xz")


class DataFormatError(ValueError):
    """A data file does not follow the published format it is read as (the message names file and line)."""


class DataFormatWarning(UserWarning):
    """A known quirk of a published file was worked around (the message says what was assumed)."""


def as_existing_file(path: PathLike, argument: str = "path") -> Path:
    """``Path(path)``, raising FileNotFoundError naming ``argument`` when it is not a file."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{argument} must be a path (str or os.PathLike), got {type(path).__name__}")
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{argument}: no such file {str(path)!r}")
    return path


# What gzip / lzma raise for damaged or mislabelled input (BadGzipFile is an OSError subclass).
_DECOMPRESSION_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error, lzma.LZMAError)


def _decompression_message(path: Path, error: BaseException) -> str:
    kind = {".gz": "gzip", ".xz": "xz"}.get(path.suffix, "")
    if isinstance(error, EOFError):
        what = f"truncated {kind} file (the compressed stream ends early)" if kind else "file ends early"
    elif isinstance(error, gzip.BadGzipFile):
        what = "not a gzip file, although its name ends in .gz"
    elif isinstance(error, lzma.LZMAError) and path.suffix == ".xz":
        what = "not a valid xz file (corrupt or not xz-compressed, although its name ends in .xz)"
    else:
        what = f"corrupt {kind} data".replace("  ", " ")
    return f"{what} (cannot read: {type(error).__name__}: {error})"


def _open_raw(path: Path) -> IO[bytes]:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]  # a GzipFile reads bytes
    if path.suffix == ".xz":
        return lzma.open(path, "rb")
    return open(path, "rb")


class _CheckedBinary:
    """A binary reader whose decompression errors become DataFormatError naming the file."""

    def __init__(self, path: Path):
        self.path = path
        self._raw = _open_raw(path)

    def _call(self, method, *args):
        try:
            return method(*args)
        except _DECOMPRESSION_ERRORS as error:
            raise DataFormatError(f"{self.path}: {_decompression_message(self.path, error)}") from None

    def read(self, size: int = -1) -> bytes:
        return self._call(self._raw.read, size)

    def readline(self, size: int = -1) -> bytes:
        return self._call(self._raw.readline, size)

    def close(self) -> None:
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _CheckedText:
    """Text lines of a (possibly compressed) file, decoded line by line so that errors name the exact line.

    Lines keep their ending (LF or CRLF), as with ``open(..., newline="")``. Decompression and
    decoding errors become DataFormatError("<file>: line <n>: ...").
    """

    def __init__(self, path: Path, encoding: str):
        self.path = path
        self.encoding = codecs.lookup(encoding).name
        if self.encoding.startswith(("utf-16", "utf-32")):
            raise ValueError(f"encoding must be ASCII-compatible (one byte per newline), got {encoding!r}")
        self._binary = _CheckedBinary(path)
        self.line_number = 0  # lines returned so far

    def _decode(self, data: bytes, first_line: int) -> str:
        try:
            return data.decode(self.encoding)
        except UnicodeDecodeError as error:
            line = first_line + data.count(b"\n", 0, error.start)
            column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
            raise DataFormatError(
                f"{self.path}: line {line}, byte {column}: not valid {self.encoding} text "
                f"({error.reason}: {data[error.start : error.end]!r})"
            ) from None

    def _checked(self, method, *args):
        try:
            return method(*args)
        except DataFormatError as error:
            raise DataFormatError(
                str(error).replace(f"{self.path}: ", f"{self.path}: line {self.line_number + 1}: ", 1)
            ) from None

    def readline(self) -> str:
        data = self._checked(self._binary.readline)
        if not data:
            return ""
        text = self._decode(data, self.line_number + 1)
        self.line_number += 1
        return text

    def __iter__(self) -> Iterator[str]:
        while True:
            line = self.readline()
            if not line:
                return
            yield line

    def read(self) -> str:
        """The rest of the file as one string (a decompression error names the file; the line is not known)."""
        data = self._binary.read()
        text = self._decode(data, self.line_number + 1)
        self.line_number += data.count(b"\n")
        return text

    def readlines(self) -> list[str]:
        return list(self)

    def close(self) -> None:
        self._binary.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_binary(path: PathLike, argument: str = "path") -> _CheckedBinary:
    """Open a file for reading bytes (``read``, ``readline``), decompressing ``.gz`` and ``.xz`` by their suffix.

    Damaged or mislabelled compressed data raises DataFormatError naming the file.
    """
    return _CheckedBinary(as_existing_file(path, argument))


def open_text(path: PathLike, argument: str = "path", encoding: str = "utf-8") -> _CheckedText:
    """Open a (possibly ``.gz``/``.xz`` compressed) text file: iterate its lines, ``readline()`` or ``read()``.

    Lines keep their line ending. Damaged compressed data and text not valid in ``encoding`` raise
    DataFormatError naming the file and the line.
    """
    return _CheckedText(as_existing_file(path, argument), encoding)


def _match(folder: Path, name: str, suffixes: Sequence[str]) -> Path | None:
    """``folder/name`` or its compressed twin (``name`` + one of ``suffixes``; for a compressed ``name``, the plain
    file): the exact spelling first, then ignoring case. None if absent."""
    candidates = [name]
    for suffix in suffixes:
        if name.endswith(suffix):
            candidates.append(name[: -len(suffix)])
            break
    else:
        candidates.extend(name + suffix for suffix in suffixes)
    for candidate in candidates:
        if (folder / candidate).is_file():
            return folder / candidate
    if not folder.is_dir():
        return None
    by_lower: dict[str, Path] = {}
    for entry in sorted(folder.iterdir()):
        by_lower.setdefault(entry.name.lower(), entry)
    for candidate in candidates:
        match = by_lower.get(candidate.lower())
        if match is not None and match.is_file():
            return match
    return None


@overload
def locate(
    name: str,
    files: Sequence[str],
    data_dir: PathLike | None = ...,
    download: bool = ...,
    cache_dir: PathLike | None = ...,
    base_url: str | None = ...,
    *,
    folders: Sequence[str] = ...,
    optional: Sequence[str] = ...,
    suffixes: Sequence[str] = ...,
    required: Literal[True] = ...,
) -> dict[str, Path]: ...


@overload
def locate(
    name: str,
    files: Sequence[str],
    data_dir: PathLike | None = ...,
    download: bool = ...,
    cache_dir: PathLike | None = ...,
    base_url: str | None = ...,
    *,
    folders: Sequence[str] = ...,
    optional: Sequence[str] = ...,
    suffixes: Sequence[str] = ...,
    required: bool,
) -> dict[str, Path] | None: ...


def locate(
    name: str,
    files: Sequence[str],
    data_dir: PathLike | None = None,
    download: bool = True,
    cache_dir: PathLike | None = None,
    base_url: str | None = None,
    *,
    folders: Sequence[str] = (),
    optional: Sequence[str] = (),
    suffixes: Sequence[str] = COMPRESSED_SUFFIXES,
    required: bool = True,
) -> dict[str, Path] | None:
    """``{file: path}`` for all ``files`` of dataset ``name``: from ``data_dir`` (default ``$GPFLOW_EXT_DATA``),
    the cache, or a download. The one place where dataset files are looked for.

    In each root (``data_dir``, then the cache folder), the folders searched are ``root/name``, ``root/<f>`` for
    each of ``folders`` (other names the dataset's folder goes by), then ``root`` itself; the first folder holding
    every one of ``files`` wins. A file matches plain or compressed (``name`` + one of ``suffixes``, or the plain
    file for a compressed name), spelled exactly or, failing that, in any letter case. When no folder holds them
    and ``download`` is set, a dataset of :data:`~gpflow_ext.data.download.REGISTRY` is downloaded (checksums
    verified) into the cache.

    :param name: the dataset's folder name (``"bibtex"``, ``"mnist"``, ...).
    :param files: the file names needed, each found in the same folder.
    :param data_dir: the root folder laid out like ``shared/data``, or the dataset folder itself.
    :param download: fetch a downloadable dataset when it is found nowhere.
    :param cache_dir: the download cache (default ``gpflow_ext.config.cache_dir()``).
    :param base_url: a mirror for the download.
    :param folders: other names of the dataset's folder, tried after ``name``.
    :param optional: files returned when present in the folder that holds ``files``, left out otherwise.
    :param suffixes: compressed forms accepted (default ``.gz`` and ``.xz``).
    :param required: when False, return None instead of raising.
    :raises FileNotFoundError: naming every place searched when the files are missing (with ``required``).
    """
    if data_dir is not None and not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(f"data_dir must be a path (str or os.PathLike) or None, got {type(data_dir).__name__}")
    configured = config.data_dir()
    roots: list[Path] = [Path(data_dir).expanduser()] if data_dir is not None else ([configured] if configured else [])
    roots.append(Path(cache_dir if cache_dir is not None else config.cache_dir()).expanduser())
    searched: list[str] = []

    def find_in(folder: Path) -> dict[str, Path] | None:
        found = {}
        for file in files:
            path = _match(folder, file, suffixes)
            if path is None:
                return None
            found[file] = path
        for file in optional:
            path = _match(folder, file, suffixes)
            if path is not None:
                found[file] = path
        return found

    for index, root in enumerate(roots):
        is_cache = index == len(roots) - 1
        for folder in [root / name] + ([] if is_cache else [root / other for other in folders] + [root]):
            searched.append(str(folder))
            found = find_in(folder)
            if found is not None:
                return found
    if download and name in REGISTRY:
        folder = download_dataset(name, cache_dir=None if cache_dir is None else Path(cache_dir), base_url=base_url)
        found = find_in(Path(folder))
        if found is not None:
            return found
        searched.append(f"{folder} (after download)")
    if not required:
        return None
    raise FileNotFoundError(
        f"dataset {name!r}: files {list(files)} (plain or {'/'.join(suffixes)}) not found in {searched}"
        + ("" if download else "; pass download=True to fetch them")
        + ("" if name in REGISTRY else f"; {name!r} cannot be downloaded, set ${config.DATA_ENV}")
    )
