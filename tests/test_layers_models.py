"""Models never change at import: importing the recipes adds no attribute to a class or module defined elsewhere."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Loads the package without running ``gpflow_ext/__init__.py`` (which may import the recipes itself), records
# every class and module of gpflow_ext outside the recipes, imports every recipe module, then records them again.
SNAPSHOT = r"""
import importlib, importlib.util, inspect, json, pkgutil, sys, types

root = sys.argv[1]
spec = importlib.util.spec_from_file_location("gpflow_ext", root + "/gpflow_ext/__init__.py",
                                              submodule_search_locations=[root + "/gpflow_ext"])
package = importlib.util.module_from_spec(spec)
sys.modules["gpflow_ext"] = package  # the package object only: its __init__ is not run


def import_all(path, prefix, skip):
    # pkgutil.walk_packages would import every package it passes, gpflow_ext.recipes included
    for info in pkgutil.iter_modules(path, prefix):
        if info.name != skip:
            module = importlib.import_module(info.name)
            if info.ispkg:
                import_all(module.__path__, info.name + ".", skip)


import_all(package.__path__, "gpflow_ext.", "gpflow_ext.recipes")


def snapshot():
    out = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("gpflow_ext") or name.startswith("gpflow_ext.recipes"):
            continue
        out[name] = sorted(k for k, v in vars(module).items() if not isinstance(v, types.ModuleType))
        for attr, value in list(vars(module).items()):
            if inspect.isclass(value) and value.__module__ == name:
                out[f"{name}.{attr}"] = sorted(vars(value))
    return out


before = snapshot()
import_all(package.__path__, "gpflow_ext.", None)
after = snapshot()
changed = {k: sorted(set(after.get(k, [])) ^ set(v)) for k, v in before.items() if set(after.get(k, [])) != set(v)}
print(json.dumps({"checked": sorted(before), "changed": changed}))
"""


def test_importing_recipes_changes_no_model_class_or_module():
    proc = subprocess.run([sys.executable, "-c", SNAPSHOT, str(ROOT)], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    for name in ("gpflow_ext.models.mlgpf.MLGPF", "gpflow_ext.models.gplvf.GPLVF", "gpflow_ext.models.svdkl.SVDKL",
                 "gpflow_ext.models.svdkl", "gpflow_ext.models"):
        assert name in result["checked"]
    assert result["changed"] == {}, result["changed"]
