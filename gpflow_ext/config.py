"""Library-wide settings.

The one setting that points tests, experiments and benchmarks at local copies of the
datasets is the environment variable ``GPFLOW_EXT_DATA`` (a folder laid out like
``shared/data``: ``bibtex/``, ``movielens-100k/``, ``mnist/``, ``adult/``, ``connect-4/``).
Downloads for users on a networked machine are cached in ``GPFLOW_EXT_CACHE``
(default ``~/.cache/gpflow_ext``).
"""
import os
from pathlib import Path
from typing import Optional

DATA_ENV = "GPFLOW_EXT_DATA"
CACHE_ENV = "GPFLOW_EXT_CACHE"


def data_dir() -> Optional[Path]:
    """The folder named by ``$GPFLOW_EXT_DATA``, or None when it is unset."""
    value = os.environ.get(DATA_ENV)
    return Path(value).expanduser().resolve() if value else None


def cache_dir() -> Path:
    """Folder where downloaded datasets are cached (created on demand)."""
    return Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "gpflow_ext")).expanduser()
