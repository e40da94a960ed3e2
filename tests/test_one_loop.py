"""One training loop: gradients are applied only inside ``gpflow_ext.training`` (its step).

Every model, experiment, benchmark of our own models, notebook and test-time fit trains through
``gpflow_ext.training.fit`` (or times fit's compiled step). The exceptions are the tests of the
training package itself (tests/training: hand-written reference loops that fit is checked against),
a peer's own loop in benchmarks/, marked ``# peer`` on its line, and ``scipy.optimize.minimize`` over numpy
arrays (a closed-form twin's solve, e.g. the MAP weights a recipe tunes with: no model variable is trained).
"""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PATTERN = re.compile(r"apply_gradients\(|(?<!scipy\.optimize)\.minimize\(")
SKIPPED_DIRECTORIES = {"__pycache__", "node_modules", "site-packages", "build", "dist"}
EXEMPT = (REPO / "gpflow_ext" / "training", REPO / "tests" / "training")


def _source_files():
    for path in sorted(REPO.rglob("*")):
        relative = path.relative_to(REPO)
        if any(part.startswith(".") or part in SKIPPED_DIRECTORIES for part in relative.parts[:-1]):
            continue
        if path.suffix not in (".py", ".ipynb") or not path.is_file():
            continue
        if path == Path(__file__).resolve() or any(root in path.parents for root in EXEMPT):
            continue
        yield path, relative


def hand_written_loops():
    """``path:line: text`` of every gradient application outside the training package (peers excepted)."""
    found = []
    for path, relative in _source_files():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if not PATTERN.search(line):
                continue
            if relative.parts[0] == "benchmarks" and "# peer" in line:
                continue  # a peer's own loop (e.g. GPflow's tutorial loop that bench_fit.py times fit against)
            found.append(f"{relative}:{number}: {line.strip()}")
    return found


def test_gradients_are_applied_only_by_the_training_package():
    found = hand_written_loops()
    assert not found, "train through gpflow_ext.training.fit (or time its step), not a hand-written loop:\n" + "\n".join(found)


def test_the_search_sees_the_repository():
    names = {str(relative) for _, relative in _source_files()}
    assert {"experiments/gplvf_movielens.py", "notebooks/gplvf.ipynb", "benchmarks/bench_fit.py",
            "gpflow_ext/models/gplvf.py"} <= names
    assert not any(name.startswith("gpflow_ext/training/") for name in names)
