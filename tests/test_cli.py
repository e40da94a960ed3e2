"""The scripts' command line: every script in experiments/ and benchmarks/ answers ``--help`` (defaults shown)
without the optional peer packages, runs as ``python -m``, and the README's main command prints no TensorFlow
log lines while every tour section writes TensorBoard logs."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FOLDERS = ("experiments", "benchmarks")
#: optional peer packages that no script may need for ``--help``
PEERS = ("torch", "gpytorch", "GPy", "napkinxc", "omikuji")
#: lines TensorFlow and its libraries log (C++ absl/glog lines, the pre-init notice, Python loggers)
TF_LOG_LINE = re.compile(
    r"^[IWEF]\d{4} \d\d:\d\d:\d\d|All log messages before absl::InitializeLog|oneDNN custom operations|"
    r"cuda_|cudart_stub|cpu_feature_guard|Not handling type DT_|^WARNING:tensorflow|^WARNING:absl|"
    r"rebuild TensorFlow with the appropriate compiler flags"
)

# Runs each module as ``python -m NAME --help`` would (runpy, run_name="__main__") in one interpreter, so
# TensorFlow is imported once per batch; the peer packages are made unimportable first.
RUNNER = r'''
import contextlib, importlib.abc, io, json, runpy, sys

class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in PEERS:
            raise ImportError(f"{name} is blocked: --help must not need it")
        return None

sys.meta_path.insert(0, Blocked())
results = {}
for name in MODULES:
    sys.argv = [name, "--help"]
    out = io.StringIO()
    code = None
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_module(name, run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        code = exit_.code
    except BaseException as error:
        code = f"{type(error).__name__}: {error}"
    results[name] = {"code": code, "help": out.getvalue()}
print("RESULTS " + json.dumps(results))
'''


def scripts():
    """``experiments.NAME`` / ``benchmarks.NAME`` of every file with a ``__main__`` block."""
    found = []
    for folder in FOLDERS:
        for path in sorted((REPO / folder).glob("*.py")):
            if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8"):
                found.append(f"{folder}.{path.stem}")
    return found


def _environment():
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # the scripts' own default
    env.pop("PYTHONPATH", None)  # `python -m` from the repository root needs nothing on the path
    return env


def test_every_script_answers_help_with_defaults_without_peer_packages():
    names = scripts()
    assert {"experiments.tour", "benchmarks.svdkl_gpytorch_peer", "experiments.xmc_baselines"} <= set(names)
    batches = [[n for n in names if n.startswith(f"{folder}.")] for folder in FOLDERS]
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", f"PEERS = {PEERS!r}\nMODULES = {batch!r}\n" + RUNNER],
            cwd=REPO, env=_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for batch in batches
    ]  # the two batches in parallel
    results = {}
    for process in processes:
        stdout, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, stderr[-3000:]
        line = [text for text in stdout.splitlines() if text.startswith("RESULTS ")][-1]
        results.update(json.loads(line[len("RESULTS "):]))
        assert not [text for text in stderr.splitlines() if TF_LOG_LINE.search(text)], stderr[-3000:]
    failures = {name: r["code"] for name, r in results.items() if r["code"] not in (0, None)}
    assert not failures, failures
    for name, result in results.items():
        assert result["help"].startswith("usage:"), (name, result["help"][:200])
        assert "(default:" in result["help"], (name, result["help"])


def test_shared_flags_have_one_name():
    """No script keeps the old spellings of the shared flags."""
    old = re.compile(r"add_argument\(\s*\"--(small|quick|figures)\"")
    exempt = set()
    offenders = [
        f"{folder}/{path.name}"
        for folder in FOLDERS
        for path in sorted((REPO / folder).glob("*.py"))
        if path.name not in exempt and old.search(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, offenders


# ``python -c`` in the repository root with TF_CPP_MIN_LOG_LEVEL=0: experiments.quiet then leaves TensorFlow
# unimported, and experiments.common / experiments.tour import it only inside the functions that train
NO_TENSORFLOW = {"TF_CPP_MIN_LOG_LEVEL": "0"}

BASE_PARSER = r'''
import json
from experiments.common import base_parser

parser = base_parser("demo", epochs=False, logdir=False, float32=True, progress=True, figure_dir=True,
                     smoke="ten rows")
parser.add_argument("--rank", type=int, default=7)  # no help text: the default is still shown
args = parser.parse_args(["--smoke", "--float32", "--no-progress", "--seed", "3"])
print(json.dumps({"help": parser.format_help(), "args": vars(args)}, default=str))
'''


def _python_json(run_python, code):
    """The JSON that ``code`` prints last, run by ``python -c`` in the repository root (TensorFlow not loaded)."""
    return json.loads(run_python("-c", code, env=NO_TENSORFLOW, timeout=120).stdout.splitlines()[-1])


def test_base_parser_shows_defaults_and_adds_only_the_requested_flags(run_python):
    result = _python_json(run_python, BASE_PARSER)
    text, args = result["help"], result["args"]
    for flag in ("--data-dir", "--output", "--seed", "--float32", "--no-progress", "--figure-dir", "--smoke"):
        assert flag in text, flag
    assert "--epochs" not in text and "--logdir" not in text
    assert "(default: 7)" in text and "tiny run for the tests: ten rows" in text
    assert args["smoke"] and args["float32"] and args["no_progress"] and args["seed"] == 3
    assert args["figure_dir"] is None


def test_tour_prints_no_tensorflow_log_lines_and_logs_every_section(tmp_path, run_python):
    """The README's main command at its smallest setting, as a user runs it (no TF_CPP_MIN_LOG_LEVEL set)."""
    sections = _python_json(run_python, "import json\nfrom experiments.tour import SECTIONS\n"
                                        "print(json.dumps([name for name, _ in SECTIONS]))")
    assert "svgp_digits" in sections
    completed = run_python("-m", "experiments.tour", "--smoke", "--no-progress", "--logdir", tmp_path / "runs",
                           "--output", tmp_path / "tour.json")
    printed = completed.stdout + completed.stderr
    assert not [line for line in printed.splitlines() if TF_LOG_LINE.search(line)], printed
    results = json.loads((tmp_path / "tour.json").read_text())
    assert set(results) == set(sections) | {"provenance"}
    for name in sections:
        assert list((tmp_path / "runs" / name).rglob("events.out.tfevents.*")), name

