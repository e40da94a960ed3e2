"""fit under tf.distribute.MultiWorkerMirroredStrategy: two CPU worker processes on 127.0.0.1 (started by
python -m gpflow_ext.training.launch) train SVGP, MLGPF (CSR inputs, sparse labels, negative-label
sampling) and GPLVF (flow, missing entries) to the parameters of a one-process run with the same global
batch; SIGKILL of a worker, then the same command again, resumes from the chief's checkpoint and ends
where an uninterrupted run ends (marked slow). The job is tests/training/multiworker_job.py."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
JOB = [sys.executable, str(REPO / "tests" / "training" / "multiworker_job.py")]
LAUNCH = [sys.executable, "-m", "gpflow_ext.training.launch", "--workers", "2", "--cpu", "--"]
MODELS = ("svgp", "mlgpf", "gplvf")


def _env():
    return dict(os.environ, CUDA_VISIBLE_DEVICES="-1", TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1",
                PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _start(command):
    env = _env()
    env.pop("TF_CONFIG", None)
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(process, timeout=600):
    out, _ = process.communicate(timeout=timeout)
    return process.returncode, out


def _max_diff(a_path, b_path):
    a, b = np.load(a_path), np.load(b_path)
    assert sorted(a.files) == sorted(b.files)
    return max(float(np.max(np.abs(a[k] - b[k]))) for k in a.files)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The one-process run and the two-worker run of every model (started together)."""
    root = tmp_path_factory.mktemp("multiworker")
    single = _start(JOB + [str(root / "single")])
    multi = _start(LAUNCH + JOB + [str(root / "multi")])
    code_single, out_single = _finish(single)
    code_multi, out_multi = _finish(multi)
    assert code_single == 0, out_single[-4000:]
    assert code_multi == 0, out_multi[-4000:]
    return root, out_multi


@pytest.mark.parametrize("name", MODELS)
def test_two_workers_equal_one_process(runs, name):
    root, _ = runs
    assert _max_diff(root / "single" / f"{name}.npz", root / "multi" / f"{name}.npz") <= 1e-8
    single = json.loads((root / "single" / f"{name}.json").read_text())["objective"]
    multi = json.loads((root / "multi" / f"{name}.json").read_text())["objective"]
    np.testing.assert_allclose(multi, single, rtol=1e-10)


def test_only_the_chief_writes_results(runs):
    root, out = runs
    assert sorted(p.name for p in (root / "multi").glob("*.npz")) == sorted(f"{m}.npz" for m in MODELS)
    for name in MODELS:  # both workers trained (their logs), one wrote
        assert f"[worker 0] {name}: objective" in out and f"[worker 1] {name}: objective" in out


@pytest.mark.slow  # two more two-worker launches (about 70 s of CPU; 152 s of wall time on the shared 2 cores)
def test_sigkill_of_a_worker_then_the_same_command_resumes_from_the_chiefs_checkpoint(runs, tmp_path):
    root, _ = runs
    out, checkpoints = tmp_path / "out", tmp_path / "checkpoints"
    command = LAUNCH + JOB + [str(out), "--models", "mlgpf", "--checkpoints", str(checkpoints),
                              "--checkpoint-every-steps", "1", "--sleep", "0.4"]
    first = _start(command)
    started = time.monotonic()
    while not list((checkpoints / "mlgpf").glob("ckpt-3.index")) and time.monotonic() - started < 400:
        assert first.poll() is None, first.communicate()[0][-4000:]
        time.sleep(0.05)
    os.kill(int((out / "pid-1").read_text()), signal.SIGKILL)  # worker 1, mid-run
    code, log = _finish(first)
    assert code == 128 + signal.SIGKILL, log[-4000:]
    assert "worker 1 exited with status 137; stopping the others" in log
    assert not (out / "mlgpf.npz").exists()  # the run was cut short
    code, log = _finish(_start(command))
    assert code == 0, log[-4000:]
    assert "[worker 0] fit: resumed from" in log and "[worker 1] fit: resumed from" in log
    assert json.loads((out / "mlgpf.json").read_text())["resumed_from"] is not None
    assert _max_diff(root / "single" / "mlgpf.npz", out / "mlgpf.npz") <= 1e-8
