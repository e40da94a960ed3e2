"""Small file helpers shared by the readers: transparent ``.gz``/``.xz`` opening and locating files."""
import gzip
import lzma
import os
from pathlib import Path
from typing import IO, Iterable, Optional, Union

PathLike = Union[str, os.PathLike]
COMPRESSED_SUFFIXES = (".gz", ".xz")


class DataFormatError(ValueError):
    """A data file does not follow the published format it is read as (the message names file and line)."""


def as_existing_file(path: PathLike, argument: str = "path") -> Path:
    """``Path(path)``, raising FileNotFoundError naming ``argument`` when it is not a file."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{argument} must be a path (str or os.PathLike), got {type(path).__name__}")
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{argument}: no such file {str(path)!r}")
    return path


def open_binary(path: PathLike, argument: str = "path") -> IO[bytes]:
    """Open a file for reading bytes, decompressing ``.gz`` and ``.xz`` by their suffix."""
    path = as_existing_file(path, argument)
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    if path.suffix == ".xz":
        return lzma.open(path, "rb")
    return open(path, "rb")


def open_text(path: PathLike, argument: str = "path", encoding: str = "utf-8") -> IO[str]:
    """Open a (possibly ``.gz``/``.xz`` compressed) text file."""
    path = as_existing_file(path, argument)
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding=encoding, newline="")
    if path.suffix == ".xz":
        return lzma.open(path, "rt", encoding=encoding, newline="")
    return open(path, "rt", encoding=encoding, newline="")


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
