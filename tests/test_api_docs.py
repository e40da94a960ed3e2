"""The API reference: every public class and function has a docstring, and ``docs/api`` builds with Sphinx
treating warnings as errors (the same command CI runs)."""

import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import gpflow_ext

ROOT = Path(__file__).resolve().parents[1]


def public_modules() -> list[str]:
    """``gpflow_ext`` and every module or subpackage below it with no ``_``-prefixed part in its name."""
    names = ["gpflow_ext"]
    for info in pkgutil.walk_packages(gpflow_ext.__path__, "gpflow_ext."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def public_api(module) -> list[str]:
    """The module's ``__all__`` if it has one, else the public names of classes and functions defined in it."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [
        name
        for name, obj in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(obj) or inspect.isfunction(obj))
        and getattr(obj, "__module__", None) == module.__name__
    ]


def test_every_public_class_and_function_has_a_docstring():
    undocumented = []
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        for name in public_api(module):
            obj = getattr(module, name)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and not (obj.__doc__ or "").strip():
                undocumented.append(f"{module_name}.{name}")
    assert not undocumented, "public classes and functions without a docstring:\n" + "\n".join(undocumented)


def test_every_name_in_all_exists():
    missing = []
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            if not hasattr(module, name):
                missing.append(f"{module_name}.{name}")
    assert not missing, "names in __all__ that the module does not define:\n" + "\n".join(missing)


@pytest.mark.slow  # about a minute; CI runs it (sphinx is in requirements.txt)
def test_api_reference_builds_without_warnings(tmp_path):
    start = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            "-d",
            str(tmp_path / "doctrees"),
            str(ROOT / "docs" / "api"),
            str(tmp_path / "html"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        timeout=300,
    )
    messages = [line for line in result.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert result.returncode == 0, "sphinx-build -W failed:\n" + "\n".join(messages or result.stderr.splitlines()[-30:])
    assert (tmp_path / "html" / "index.html").is_file()
    assert time.monotonic() - start < 120, "the API reference took more than 2 minutes to build"
