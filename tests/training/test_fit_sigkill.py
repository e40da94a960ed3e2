"""SIGKILL at random moments (also while a checkpoint is being written), then the same command
again: the run finishes with the parameters of an uninterrupted run, bit for bit."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np

SCRIPT = textwrap.dedent(
    """
    import sys
    import gpflow
    import numpy as np
    from gpflow_ext.training import Checkpointing, fit

    folder, out = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2)); Y = np.sin(2 * X[:, :1]) + 0.1 * rng.normal(size=(300, 1))
    model = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(lengthscales=[1.0, 1.0]),
                               gpflow.likelihoods.Gaussian(variance=0.5), X[:8].copy(), num_data=300)
    fit(model, (X, Y), epochs=8, batch_size=20, learning_rate=0.03, seed=5, progress=False,
        callbacks=[] if folder == "-" else [Checkpointing(folder, every_steps=2, max_checkpoints=2)])
    np.savez(out, **{k: v.numpy() for k, v in gpflow.utilities.parameter_dict(model).items()})
    """
)


def _run(script, folder, out):
    return subprocess.run([sys.executable, str(script), str(folder), str(out)], capture_output=True, text=True,
                          timeout=300)


def test_sigkill_at_random_moments_then_rerun_equals_an_uninterrupted_run(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    straight = _run(script, "-", tmp_path / "straight.npz")
    assert straight.returncode == 0, straight.stderr[-2000:]
    rng = np.random.default_rng(0)
    folder = tmp_path / "run"
    for _kill in range(3):
        process = subprocess.Popen([sys.executable, str(script), str(folder), str(tmp_path / "unused.npz")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started = time.time()
        while not list(folder.glob("ckpt-*.index")) and time.time() - started < 120 and process.poll() is None:
            time.sleep(0.01)
        time.sleep(float(rng.uniform(0.0, 1.5)))
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait()
    finished = _run(script, folder, tmp_path / "resumed.npz")
    assert finished.returncode == 0, finished.stderr[-2000:]
    a, b = np.load(tmp_path / "straight.npz"), np.load(tmp_path / "resumed.npz")
    assert sorted(a.files) == sorted(b.files)
    assert max(float(np.max(np.abs(a[k] - b[k]))) for k in a.files) == 0.0
