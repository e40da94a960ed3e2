"""Small file helpers shared by the readers: transparent ``.gz``/``.xz`` opening and locating files.

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
from pathlib import Path
from typing import IO, Iterable, Iterator, List, Optional, Union

PathLike = Union[str, os.PathLike]
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
        return gzip.open(path, "rb")
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
                f"({error.reason}: {data[error.start:error.end]!r})"
            ) from None

    def _checked(self, method, *args):
        try:
            return method(*args)
        except DataFormatError as error:
            raise DataFormatError(str(error).replace(f"{self.path}: ", f"{self.path}: line {self.line_number + 1}: ", 1)) from None

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

    def readlines(self) -> List[str]:
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


def find_file(folder: PathLike, name: str) -> Optional[Path]:
    """``folder/name`` or its ``.gz``/``.xz`` twin (or, for a compressed name, the plain file); None if absent."""
    folder = Path(folder)
    candidates = [name]
    for suffix in COMPRESSED_SUFFIXES:
        if name.endswith(suffix):
            candidates.append(name[: -len(suffix)])
            break
    else:
        candidates.extend(name + suffix for suffix in COMPRESSED_SUFFIXES)
    for candidate in candidates:
        path = folder / candidate
        if path.is_file():
            return path
    return None


def find_files(folder: PathLike, names: Iterable[str]) -> Optional[dict]:
    """``{name: path}`` when every one of ``names`` is found in ``folder`` (see find_file), else None."""
    found = {}
    for name in names:
        path = find_file(folder, name)
        if path is None:
            return None
        found[name] = path
    return found
