"""Shared fixtures.

Real datasets are found through ``$GPFLOW_EXT_DATA`` (``.ci/run`` points it at
``../shared/data``). Outside CI a missing dataset skips the test; under CI (``CI=true``)
it fails, so a broken data setting can never pass silently.
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpflow_ext import config


def _missing(reason: str):
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"dataset missing under CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = config.data_dir()
    if path is None:
        _missing(f"${config.DATA_ENV} is not set")
    if not path.is_dir():
        _missing(f"${config.DATA_ENV}={path} is not a folder")
    return path


@pytest.fixture
def dataset_path(data_dir):
    """``dataset_path("bibtex", "bibtex-train.arff.gz")`` -> Path, failing under CI if absent."""

    def get(*parts: str) -> Path:
        path = data_dir.joinpath(*parts)
        if not path.exists():
            _missing(f"{path} not found")
        return path

    return get


@pytest.fixture
def rng():
    return np.random.default_rng(0)


REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def run_python():
    """``run_python("-m", "benchmarks.bench_fit", "--smoke", env={...})``: ``python ARGS`` from the repository root,
    as a user runs the scripts (no ``PYTHONPATH``, ``TF_CPP_MIN_LOG_LEVEL`` unset: the scripts' own default, unless
    ``env`` sets it); returns the ``CompletedProcess`` (text), failing the test with the output's tail when
    ``check`` and the exit status is not 0. Tests run the scripts this way: they never import them."""

    def run(*args, env=None, check=True, timeout=900):
        environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TF_CPP_MIN_LOG_LEVEL")}
        environment.update(env or {})
        completed = subprocess.run([sys.executable, *map(str, args)], cwd=REPO, env=environment,
                                   capture_output=True, text=True, timeout=timeout)
        if check:
            assert completed.returncode == 0, (completed.stdout[-3000:], completed.stderr[-5000:])
        return completed

    return run
