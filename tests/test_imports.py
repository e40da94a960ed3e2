"""Imports inside ``gpflow_ext`` point one way, and ``import gpflow_ext`` stays light.

The import graph is read from the source with :mod:`ast`: every ``import`` statement counts, at module
level or inside a function (a lazy import closes a loop just as well as an eager one). A cycle is a
strongly connected component of more than one module, or a module importing itself.
"""
import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "gpflow_ext"
ROOT_NAME = PACKAGE.name


def _module_files() -> dict[str, Path]:
    """``{dotted module name: file}`` for every module of the package (a package is its ``__init__``)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _targets(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules that module ``name`` (read from ``path``) imports, anywhere in its body."""
    package = name if _is_package(path) else name.rpartition(".")[0]
    found = set()

    def add(module: str) -> None:
        # the most specific module of the package that `module` names (`a.b.attr` -> `a.b`)
        while module and module not in modules:
            module = module.rpartition(".")[0]
        if module:
            found.add(module)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == ROOT_NAME:
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != ROOT_NAME:
                continue
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                if submodule in modules:  # `from . import x` with x a module imports that module
                    found.add(submodule)
                else:
                    add(module)
    return found


def import_graph() -> dict[str, set[str]]:
    """``{module: modules it imports}`` over every module of ``gpflow_ext``."""
    modules = _module_files()
    return {name: _targets(name, path, modules) for name, path in modules.items()}


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative), components in no particular order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in graph:
                    continue
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every component of the graph with more than one member, and every member importing itself."""
    cycles = [c for c in _strongly_connected(graph) if len(c) > 1]
    cycles += [[name] for name, targets in graph.items() if name in targets]
    return sorted(cycles)


def folder_of(module: str, packages: set[str]) -> str:
    """The top-level folder of ``gpflow_ext`` a module lives in (a nested package such as
    ``gpflow_ext.data.multilabel`` belongs to ``gpflow_ext.data``; the module check judges it inside);
    top-level modules stand alone."""
    parts = module.split(".")
    folder = ".".join(parts[:2])
    return folder if folder in packages or len(parts) > 2 else module


def folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph collapsed onto folders (``gpflow_ext.covariances.grid`` -> ``gpflow_ext.covariances``),
    without a folder's edges to itself (its ``__init__`` importing its own submodules)."""
    files = _module_files()
    packages = {m for m, p in files.items() if _is_package(p)}
    folders: dict[str, set[str]] = {}
    for module, targets in graph.items():
        source = folder_of(module, packages)
        edges = folders.setdefault(source, set())
        edges.update(folder_of(t, packages) for t in targets)
        edges.discard(source)
    return folders


def _describe(cycles: list[list[str]], graph: dict[str, set[str]]) -> str:
    lines = []
    for cycle in cycles:
        members = set(cycle)
        edges = [f"{a} -> {b}" for a in cycle for b in sorted(graph[a] & members)]
        lines.append(f"{cycle}: " + ", ".join(edges))
    return "\n".join(lines)


def test_graph_reads_relative_and_lazy_imports():
    graph = import_graph()
    assert len(graph) > 50
    # `from . import x` with x a submodule is an edge to the submodule
    assert f"{ROOT_NAME}.conditionals.grid" in graph[f"{ROOT_NAME}.conditionals"]
    # `from ..x.y import z` resolves against the importing module's package
    assert f"{ROOT_NAME}.utilities" in graph[f"{ROOT_NAME}.covariances.subspace"]


def test_cycle_finder_sees_a_loop_and_a_self_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}, "e": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c"], ["d"]]


def test_no_import_cycle_between_modules():
    graph = import_graph()
    cycles = find_cycles(graph)
    assert not cycles, "import cycles inside gpflow_ext:\n" + _describe(cycles, graph)


def test_no_import_cycle_between_folders():
    graph = folder_graph(import_graph())
    cycles = find_cycles(graph)
    assert not cycles, "import cycles between gpflow_ext's folders:\n" + _describe(cycles, graph)


def test_validation_imports_nothing_else_from_the_package():
    graph = import_graph()
    prefix = f"{ROOT_NAME}.validation"
    upward = {
        f"{name} -> {target}"
        for name, targets in graph.items() if name == prefix or name.startswith(prefix + ".")
        for target in targets if not (target == prefix or target.startswith(prefix + "."))
    }
    assert not upward, sorted(upward)


LIGHT_IMPORT = """
import builtins
import sys

import gpflow  # TensorFlow's Keras may import pandas, matplotlib and sklearn itself: only gpflow_ext's imports count

requested = set()
_import = builtins.__import__


def recording_import(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__name__", "")
    if level == 0 and importer.split(".")[0] == "gpflow_ext" and name.split(".")[0] in ("pandas", "matplotlib", "sklearn"):
        requested.add(f"{importer} imports {name}")
    return _import(name, globals, locals, fromlist, level)


builtins.__import__ = recording_import
import gpflow_ext
builtins.__import__ = _import

loaded = sorted(
    name for name in sys.modules
    if name.startswith(("gpflow_ext.recipes", "gpflow_ext.data", "gpflow_ext.training"))
    or name == "gpflow_ext.serving"
)
print("loaded:", ",".join(loaded))
print("requested:", ",".join(sorted(requested)))

from gpflow_ext.validation import check_training_data
from gpflow_ext.validation.hook import accepts_sparse_inputs

assert gpflow.models.SVGP in check_training_data.registry
assert gpflow_ext.models.MLGPF in check_training_data.registry
subspace_rule = accepts_sparse_inputs.dispatch(gpflow_ext.inducing_variables.SubspaceInducingPoints)
assert accepts_sparse_inputs.dispatch(gpflow_ext.inducing_variables.BasisInducingPoints) is subspace_rule
assert subspace_rule(None) is True
assert accepts_sparse_inputs(gpflow.inducing_variables.InducingPoints([[0.0]])) is False
assert gpflow_ext.recipes.mlgpf.__name__ == "gpflow_ext.recipes.mlgpf"
assert gpflow_ext.data.load_digits.__module__.startswith("gpflow_ext.data")
assert gpflow_ext.serving.__name__ == "gpflow_ext.serving"
assert callable(gpflow_ext.training.fit)
print("ok")
"""


def test_import_is_light_and_the_rest_loads_on_first_use():
    """``import gpflow_ext`` registers dispatchers and data rules only: no training, recipes, data or serving,
    and no pandas, matplotlib or sklearn imported by gpflow_ext itself; the rest loads as attributes are used."""
    result = subprocess.run(
        [sys.executable, "-c", LIGHT_IMPORT], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split(":", 1) for line in result.stdout.splitlines() if line.startswith(("loaded:", "requested:")))
    assert lines["loaded"].strip() == "", f"loaded by `import gpflow_ext`: {lines['loaded']}"
    assert lines["requested"].strip() == "", f"imported by `import gpflow_ext`: {lines['requested']}"
    assert result.stdout.strip().splitlines()[-1] == "ok"


def test_unknown_attribute_is_an_attribute_error():
    import gpflow_ext

    with pytest.raises(AttributeError, match="no attribute 'not_a_module'"):
        gpflow_ext.not_a_module  # noqa: B018
    assert {"recipes", "data", "serving", "training"} <= set(dir(gpflow_ext))


def test_subpackage_inits_have_docstring_first_and_all():
    for init in sorted(PACKAGE.rglob("__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        name = init.relative_to(REPO)
        assert ast.get_docstring(tree), f"{name}: the docstring must come first, before any import"
        exported = [
            node for node in tree.body if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
        ]
        assert exported, f"{name}: no __all__"
        names = ast.literal_eval(exported[0].value)
        assert names and len(names) == len(set(names)), f"{name}: __all__ empty or with repeats"
        module = importlib.import_module(".".join(init.parent.relative_to(REPO).parts))
        missing = [n for n in names if not hasattr(module, n)]
        assert not missing, f"{name}: __all__ names what the package does not define: {missing}"
