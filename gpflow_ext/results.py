"""Result files that say what made them.

Every results JSON written by the experiment scripts and benchmarks goes through :func:`write_results`, which
adds a ``provenance`` record beside the numbers: the package version, the git commit (and whether the work tree
had uncommitted changes), the exact command line, the UTC time, the machine (CPU model, cores, threads), the
TensorFlow / GPflow / NumPy versions, the seeds and the wall time. Paths are written relative to the data folder
(``$GPFLOW_EXT_DATA/...``) or to the repository, never as a machine's absolute path.

>>> from gpflow_ext.results import write_results
>>> write_results({"P@1": 64.3}, "results/bibtex.json", seeds=[0])  # doctest: +SKIP
"""

import datetime
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from . import config

__all__ = ["PROVENANCE_KEYS", "provenance", "write_results", "portable", "read_results"]

#: The keys every ``provenance`` record holds.
PROVENANCE_KEYS = (
    "package_version",
    "git_commit",
    "git_dirty",
    "command",
    "utc_time",
    "cpu_model",
    "cpu_cores",
    "threads",
    "versions",
    "seeds",
    "wall_seconds",
)

_IMPORTED_AT = time.time()


def _git(repo: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _repository() -> Path | None:
    """The git work tree the running command belongs to (the current folder's), if any."""
    top = _git(Path.cwd(), "rev-parse", "--show-toplevel")
    return Path(top) if top else None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _process_started() -> float:
    """The running process's start as a Unix time (Linux ``/proc``; elsewhere when this module was imported)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(
            float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime")
        )
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, StopIteration, IndexError):
        return _IMPORTED_AT


def _threads() -> dict[str, Any]:
    usable: int | None
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    out: dict[str, Any] = {"usable_cores": usable}
    for name in ("OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
        if os.environ.get(name):
            out[name] = os.environ[name]
    tf = sys.modules.get("tensorflow")
    if tf is not None:  # 0 means "TensorFlow's default: one per usable core"
        out["tf_intra_op"] = tf.config.threading.get_intra_op_parallelism_threads()
        out["tf_inter_op"] = tf.config.threading.get_inter_op_parallelism_threads()
    return out


def _versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("tensorflow", "tensorflow-probability", "gpflow", "numpy", "scipy", "scikit-learn"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _command() -> str:
    """The command as typed: ``python -m experiments.NAME ARGS`` (``sys.orig_argv`` keeps the ``-m``)."""
    argv = list(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])
    argv[0] = Path(argv[0]).name
    return " ".join(_quote(portable(a)) for a in argv)


def _quote(word: str) -> str:
    return word if word and all(c.isalnum() or c in "-_./=,:@%+$~" for c in word) else json.dumps(word)


def portable(value: Any) -> Any:
    """``value`` with every absolute path in its strings made portable: under ``$GPFLOW_EXT_DATA`` ->
    ``$GPFLOW_EXT_DATA/...``, under the repository or the current folder -> relative, under the home folder ->
    ``~/...``; dicts, lists and tuples are walked."""
    if isinstance(value, Mapping):
        return {k: portable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable(v) for v in value]
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str) or "/" not in value:
        return value
    roots = []
    data = config.data_dir()
    if data is not None:
        roots.append((str(data), f"${config.DATA_ENV}"))
    repo = _repository()
    for folder in ([repo] if repo else []) + [Path.cwd()]:
        roots.append((str(folder.resolve()), "."))
    roots.append((str(Path.home()), "~"))
    for root, name in sorted(set(roots), key=lambda r: -len(r[0])):
        if root in ("", "/"):
            continue
        value = value.replace(root + "/", name + "/")
        if value == root:
            value = name
    return value


def _git_state() -> tuple[str | None, bool | None]:
    """The work tree's commit and whether tracked files differ from it."""
    repo = _repository()
    commit = _git(repo, "rev-parse", "HEAD") if repo else None
    status = _git(repo, "status", "--porcelain", "--untracked-files=no") if repo else None
    return commit, None if status is None else bool(status)


# the code that runs is the code at the start: a commit made while a long run goes on must not be recorded as its
# source, so the state is read when this module is imported (``import gpflow_ext`` imports it)
_GIT_AT_IMPORT = _git_state()


def provenance(*, seeds: Iterable[int] | None = None, started: float | None = None) -> dict[str, Any]:
    """What made a result: see the module docstring. ``started`` (a ``time.time()``) defaults to the process's
    start, so ``wall_seconds`` covers the whole command. The git commit and dirty flag are those of the work tree
    when this module was imported."""
    commit, dirty = _GIT_AT_IMPORT
    return {
        # the package is loaded before any of its modules: its version is read, not imported
        "package_version": sys.modules[__name__.rpartition(".")[0]].__version__,
        "git_commit": commit,
        "git_dirty": dirty,
        "command": _command(),
        "utc_time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cpu_model": _cpu_model(),
        "cpu_cores": os.cpu_count(),
        "threads": _threads(),
        "versions": _versions(),
        "seeds": None if seeds is None else [int(s) for s in seeds],
        "wall_seconds": round(time.time() - (_process_started() if started is None else started), 3),
    }


def _builtin(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} to a results JSON")


def write_results(
    results: Mapping[str, Any],
    path: str | Path | None,
    *,
    seeds: Iterable[int] | None = None,
    started: float | None = None,
    jsonl: bool = False,
) -> Path | None:
    """Write ``results`` with its ``provenance`` (see :func:`provenance`) as JSON to ``path`` and say where.

    ``path=None`` writes nothing (the scripts' ``--output`` is optional). ``jsonl=True`` appends one line (a
    record per run, for sweeps). Paths in ``results`` are made :func:`portable`. Returns the path written.
    """
    if path is None:
        return None
    if not isinstance(results, Mapping):
        raise TypeError(f"results must be a mapping (a dict of named values), got {type(results).__name__}")
    if "provenance" in results:
        raise ValueError("results already hold a 'provenance' key: write_results adds it")
    record = dict(portable(json.loads(json.dumps(results, default=_builtin))))
    record["provenance"] = provenance(seeds=seeds, started=started)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if jsonl:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, sort_keys=True) + "\n")
    else:
        path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"results written to {portable(path.resolve())}")
    return path


def read_results(path: str | Path) -> Any:
    """A results file: the JSON object, or the list of records of a ``.jsonl`` file."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)
