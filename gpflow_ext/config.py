"""Library-wide settings.

The one setting that points tests, experiments and benchmarks at local copies of the
datasets is the environment variable ``GPFLOW_EXT_DATA`` (a folder laid out like
``shared/data``: ``bibtex/``, ``movielens-100k/``, ``mnist/``, ``adult/``, ``connect-4/``).
Downloads for users on a networked machine are cached in ``GPFLOW_EXT_CACHE``
(default ``~/.cache/gpflow_ext``).

The peers the experiments and benchmarks compare against (napkinXC, omikuji, GPy, GPyTorch) run in their
own interpreter, named only by ``GPFLOW_EXT_PEERS_PYTHON`` (a Python with
``benchmarks/requirements-peers.txt`` installed); :func:`peers_python` finds it.
"""

import os
from pathlib import Path

DATA_ENV = "GPFLOW_EXT_DATA"
CACHE_ENV = "GPFLOW_EXT_CACHE"
PEERS_ENV = "GPFLOW_EXT_PEERS_PYTHON"
PEERS_HINT = (
    f"set ${PEERS_ENV} to a Python with the peers installed; create one with\n"
    "  python -m venv peers && peers/bin/pip install -r benchmarks/requirements-peers.txt\n"
    f"  export {PEERS_ENV}=$PWD/peers/bin/python"
)


def data_dir() -> Path | None:
    """The folder named by ``$GPFLOW_EXT_DATA``, or None when it is unset."""
    value = os.environ.get(DATA_ENV)
    return Path(value).expanduser().resolve() if value else None


def cache_dir() -> Path:
    """Folder where downloaded datasets are cached (created on demand)."""
    return Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "gpflow_ext")).expanduser()


def peers_python(required: bool = False) -> str | None:
    """The peers interpreter named by ``$GPFLOW_EXT_PEERS_PYTHON``.

    When it is unset or names no file: None, or with ``required`` a ``RuntimeError`` that says how to
    create one. There is no default location.
    """
    value = os.environ.get(PEERS_ENV)
    if value and Path(value).expanduser().is_file():
        return str(Path(value).expanduser())
    if required:
        problem = f"${PEERS_ENV} is not set" if not value else f"${PEERS_ENV}={value} is not a file"
        raise RuntimeError(f"no peers interpreter: {problem}; {PEERS_HINT}")
    return None
