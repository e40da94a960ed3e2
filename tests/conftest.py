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

DATA_SKIP = "dataset missing: "
PEERS_SKIP = "peers missing: "
DATA_HINT = "set GPFLOW_EXT_DATA to a folder laid out like shared/data (docs/data.md)"


def _under_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _missing(reason: str):
    if _under_ci():
        pytest.fail(f"dataset missing under CI: {reason}")
    pytest.skip(DATA_SKIP + reason)


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


def _skipped_for(terminalreporter, prefix: str) -> list:
    return [r for r in terminalreporter.stats.get("skipped", []) if prefix in _skip_reason(r)]


def pytest_sessionfinish(session, exitstatus):
    """Counts the tests skipped for a missing dataset (said after the summary by ``pytest_unconfigure``);
    under CI a test skipped for a missing dataset or peer fails the run, so a broken setting cannot pass."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    session.config._skipped_for_data = len(_skipped_for(reporter, DATA_SKIP))
    if _under_ci():
        skipped = _skipped_for(reporter, DATA_SKIP) + _skipped_for(reporter, PEERS_SKIP)
        if skipped:
            reporter.write_line(f"under CI, {len(skipped)} tests skipped for missing data or peers: the run fails",
                                red=True)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config):
    """The run's last line: how many tests were skipped because a dataset was not found, and what to set."""
    count = getattr(config, "_skipped_for_data", 0)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if count and reporter is not None:
        reporter.write_line(f"{count} tests skipped: datasets not found; {DATA_HINT}", yellow=True)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = config.data_dir()
    if path is None:
        _missing(f"${config.DATA_ENV} is not set")
    if not path.is_dir():
        _missing(f"${config.DATA_ENV}={path} is not a folder")
    return path


@pytest.fixture(scope="session")
def missing_dataset():
    """``missing_dataset(reason)``: skip (fail under CI) for a dataset that is not there, for fixtures of a
    wider scope than ``dataset_path``."""
    return _missing


@pytest.fixture
def dataset_path(data_dir):
    """``dataset_path("bibtex", "bibtex-train.arff.gz")`` -> Path, failing under CI if absent."""

    def get(*parts: str) -> Path:
        path = data_dir.joinpath(*parts)
        if not path.exists():
            _missing(f"{path} not found")
        return path

    return get


@pytest.fixture(scope="session")
def peers_python() -> Path:
    """The peers interpreter (``$GPFLOW_EXT_PEERS_PYTHON``); skips without it, fails under CI."""
    from gpflow_ext.config import PEERS_ENV
    from gpflow_ext.config import peers_python as find

    path = find(required=False)
    if path is None:
        reason = f"${PEERS_ENV} is not set or not an interpreter (benchmarks/requirements-peers.txt)"
        if _under_ci():
            pytest.fail(f"peers missing under CI: {reason}")
        pytest.skip(PEERS_SKIP + reason)
    return path


class Baselines:
    """Scores a model must beat, computed in the test from the same split."""

    @staticmethod
    def frequency_p_at_k(Y_train, Y_test, k: int = 1) -> float:
        """P@k in % of ranking every test row by the training label frequencies."""
        import scipy.sparse as sp

        from gpflow_ext.metrics import precision_at_k

        counts = np.asarray(sp.csr_matrix(Y_train).sum(axis=0)).ravel()
        order = np.argsort(-counts, kind="stable")[:k]
        top = np.tile(order, (Y_test.shape[0], 1)).astype(np.int64)
        return 100.0 * precision_at_k(Y_test, top, k, y_pred_is_indices=True)

    @staticmethod
    def majority_accuracy(y_train, y_test) -> float:
        """Accuracy of always predicting the training set's most frequent class."""
        majority = np.bincount(np.asarray(y_train, dtype=np.int64).ravel()).argmax()
        return float(np.mean(np.asarray(y_test).ravel() == majority))


@pytest.fixture(scope="session")
def baselines() -> Baselines:
    return Baselines()


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
