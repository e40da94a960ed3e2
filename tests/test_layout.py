"""The package's shape: small modules, layers that import only downwards, no mode strings switched in models,
tests that import only the library, scripts that run as ``python -m`` without editing ``sys.path``."""
import ast
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "gpflow_ext"
MAX_MODULE_LINES = 400
MAX_DOCS_FILE_BYTES = 1 << 20  # 1 MiB


def _modules(folder: Path):
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _imported_modules(path: Path):
    """Absolute names of every module ``path`` imports (module level or inside functions)."""
    package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.append(module)
            names += [f"{module}.{alias.name}" for alias in node.names]
    return names


@pytest.mark.parametrize("path", _modules(PACKAGE), ids=lambda p: str(p.relative_to(REPO)))
def test_module_is_small(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(REPO)} has {lines} lines (at most {MAX_MODULE_LINES})"


@pytest.mark.parametrize("path", _modules(PACKAGE / "models"), ids=lambda p: p.name)
def test_models_import_only_lower_layers(path):
    upward = [name for name in _imported_modules(path)
              if name.startswith(("gpflow_ext.training", "gpflow_ext.recipes", "gpflow_ext.serving"))]
    assert not upward, f"{path.name} imports {upward}: models must not depend on training, recipes or serving"


def _mode_string_switches(path: Path):
    """``self.<attr> == "literal"`` (or ``!=``, ``in (...)``) comparisons: behaviour switched on a stored string."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Compare):
            continue
        left = node.left
        if not (isinstance(left, ast.Attribute) and isinstance(left.value, ast.Name) and left.value.id == "self"):
            continue
        for comparator in node.comparators:
            literals = comparator.elts if isinstance(comparator, (ast.Tuple, ast.List, ast.Set)) else [comparator]
            if any(isinstance(c, ast.Constant) and isinstance(c.value, str) for c in literals):
                found.append(f"{path.name}:{node.lineno} self.{left.attr}")
    return found


def test_models_do_not_switch_on_mode_strings():
    switches = [hit for path in _modules(PACKAGE / "models") for hit in _mode_string_switches(path)]
    assert not switches, f"behaviour chosen by stored strings instead of objects: {switches}"


def test_tests_import_only_the_library():
    offenders = []
    for path in _modules(REPO / "tests"):
        for name in _imported_modules(path):
            if name.split(".")[0] in ("experiments", "benchmarks"):
                offenders.append(f"{path.relative_to(REPO)}: {name}")
    assert not offenders, offenders


def test_benchmarks_import_the_library_never_experiments():
    offenders = [f"{path.name}: {name}" for path in _modules(REPO / "benchmarks") for name in _imported_modules(path)
                 if name.split(".")[0] == "experiments"]
    assert not offenders, offenders


@pytest.mark.parametrize("folder", ["experiments", "benchmarks"])
def test_scripts_do_not_edit_sys_path(folder):
    offenders = [p.name for p in _modules(REPO / folder) if "sys.path.insert" in p.read_text(encoding="utf-8")
                 or "sys.path.append" in p.read_text(encoding="utf-8")]
    assert not offenders, f"{folder}/ scripts editing sys.path (run them as python -m {folder}.NAME): {offenders}"


#: modules whose import loads TensorFlow
_LOADS_TENSORFLOW = ("tensorflow", "gpflow", "gpflow_ext", "tensorflow_probability", "check_shapes")


@pytest.mark.parametrize("folder, quiet", [("experiments", "experiments.quiet"), ("benchmarks", "benchmarks.common")])
def test_scripts_silence_tensorflow_before_loading_it(folder, quiet):
    """A script (a module run as ``python -m``) imports its quiet module before its first module-level import that
    loads TensorFlow (otherwise the lines TensorFlow writes while loading are printed)."""
    offenders = []
    for path in _modules(REPO / folder):
        if "__main__" not in path.read_text(encoding="utf-8"):
            continue
        names = []
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        loads = [i for i, name in enumerate(names) if name.split(".")[0] in _LOADS_TENSORFLOW]
        if not loads:
            continue
        first_quiet = min((i for i, name in enumerate(names) if name == quiet or name.startswith(f"{folder}.")),
                          default=None)
        if first_quiet is None or first_quiet > loads[0]:
            offenders.append(path.relative_to(REPO).as_posix())
    assert not offenders, f"scripts loading TensorFlow before {quiet}: {offenders}"


def test_tracked_files_under_docs_are_small():
    """Result files and figures stay under 1 MiB each (per-row predictions are kept in the compact form of
    ``gpflow_ext.recipes.xmc_baselines.encode_rows``)."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "docs"], capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    paths = [REPO / name for name in listed.stdout.split("\0") if name]
    assert paths, "git lists no files under docs/"
    large = {p.relative_to(REPO).as_posix(): p.stat().st_size for p in paths
             if p.exists() and p.stat().st_size > MAX_DOCS_FILE_BYTES}
    assert not large, f"tracked files under docs/ larger than 1 MiB: {large}"
