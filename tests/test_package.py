import ast
import re
import sys
from pathlib import Path

import gpflow
import numpy as np
import tomllib
from packaging.requirements import Requirement

import gpflow_ext
from gpflow_ext import config

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
# import name -> distribution name, where they differ
DISTRIBUTION = {
    "sklearn": "scikit-learn",
    "tensorflow_probability": "tensorflow-probability",
    "check_shapes": "check-shapes",
    "tf_keras": "tf-keras",
}
# needed at run time but imported by the libraries below us, not by gpflow_ext's own code
INDIRECT = {"tf-keras": "gpflow.keras imports tf_keras", "tensorboard": "tf.summary needs it (fit(logdir=...))"}
TEST_TOOLS = {"pytest", "nbformat", "nbclient", "ipykernel", "jupytext", "napkinxc", "matplotlib"}


def _names(requirements):
    return {Requirement(r).name.lower() for r in requirements}


def _third_party_imports():
    """Every non-stdlib top-level module imported anywhere in gpflow_ext (module level or in
    functions), mapped to its distribution name, with the files that import it."""
    found = {}
    for path in (ROOT / "gpflow_ext").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top in sys.stdlib_module_names or top == "gpflow_ext":
                    continue
                found.setdefault(DISTRIBUTION.get(top, top).lower(), set()).add(path.name)
    return found


def test_imports_and_data_setting(monkeypatch, tmp_path):
    assert gpflow_ext.__version__
    assert gpflow.config.default_float() == np.float64  # importing gpflow_ext leaves GPflow's default
    monkeypatch.setenv(config.DATA_ENV, str(tmp_path))
    assert config.data_dir() == tmp_path.resolve()
    monkeypatch.delenv(config.DATA_ENV)
    assert config.data_dir() is None


def test_runtime_dependencies_are_what_the_code_imports():
    required = _names(PROJECT["dependencies"])
    extras = {name: _names(reqs) for name, reqs in PROJECT["optional-dependencies"].items()}
    imported = _third_party_imports()
    optional = set(imported) - required
    # everything imported is either required or in an extra: `data` (pandas, the CSV readers) or `figures`
    # (matplotlib, imported inside the recipes' plotting functions only)
    declared = extras["data"] | extras["figures"]
    assert optional <= declared, f"imported but not declared: {optional - declared}"
    assert optional == {"pandas", "matplotlib"}, optional
    assert imported["pandas"] == {"covtype.py", "airline.py", "diabetes.py"}
    assert imported["matplotlib"] == {"gplvf_images.py", "movielens.py"}
    # nothing required that is neither imported nor needed through a library below us
    assert required - set(imported) == set(INDIRECT), required - set(imported)


def test_no_test_or_notebook_tools_in_runtime_dependencies():
    required = _names(PROJECT["dependencies"])
    assert not required & TEST_TOOLS, required & TEST_TOOLS
    assert {"pytest", "napkinxc"} <= _names(PROJECT["optional-dependencies"]["test"])
    assert {"nbclient", "jupytext"} <= _names(PROJECT["optional-dependencies"]["notebooks"])
    assert "matplotlib" in _names(PROJECT["optional-dependencies"]["experiments"])


def test_bounds_lower_everywhere_upper_only_for_known_breaks():
    for text in PROJECT["dependencies"]:
        req = Requirement(text)
        operators = {spec.operator for spec in req.specifier}
        assert ">=" in operators, f"{text}: no lower bound"
        uppers = [spec for spec in req.specifier if spec.operator in ("<", "<=", "==", "~=")]
        if req.name == "numpy":  # GPflow 2.11 uses APIs removed in numpy 2
            assert [str(u) for u in uppers] == ["<2"]
        else:
            assert not uppers, f"{text}: upper bound without a known break"


def test_pinned_requirements_satisfy_the_declared_dependencies():
    pinned = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            req = Requirement(line)
            pinned[req.name.lower()] = req
    for text in PROJECT["dependencies"]:
        req = Requirement(text)
        if req.name.lower() not in pinned:
            continue  # check-shapes comes with gpflow
        for spec in pinned[req.name.lower()].specifier:
            if spec.operator in ("==", ">="):
                version = spec.version.replace(".*", ".0")
                assert req.specifier.contains(version), f"requirements.txt {spec} vs pyproject {text}"


def test_one_version_source():
    assert PROJECT["dynamic"] == ["version"] and "version" not in PROJECT
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "gpflow_ext.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", gpflow_ext.__version__)
    assert "version" not in (ROOT / "setup.py").read_text()
    init = (ROOT / "gpflow_ext" / "__init__.py").read_text()
    assert init.count("__version__ =") == 1


def test_license_and_build_files():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert PROJECT["license"] == "Apache-2.0" and PROJECT["license-files"] == ["LICENSE"]
    assert PYPROJECT["build-system"]["build-backend"] == "setuptools.build_meta"
    # the build reads only pyproject.toml, README.md and LICENSE (all in the sdist by default)
    assert "requirements" not in (ROOT / "setup.py").read_text()
    assert (ROOT / "README.md").is_file()
