"""Shared fixtures.

Real datasets are found through ``$GPFLOW_EXT_DATA`` (``.ci/run`` points it at
``../shared/data``). Outside CI a missing dataset skips the test; under CI (``CI=true``)
it fails, so a broken data setting can never pass silently.
"""
import os
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
