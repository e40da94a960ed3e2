import gpflow

import gpflow_ext
from gpflow_ext import config


def test_imports_and_data_setting(monkeypatch, tmp_path):
    assert gpflow_ext.__version__
    assert gpflow.config.default_float() is not None
    monkeypatch.setenv(config.DATA_ENV, str(tmp_path))
    assert config.data_dir() == tmp_path.resolve()
    monkeypatch.delenv(config.DATA_ENV)
    assert config.data_dir() is None
