"""tf.distribute: MirroredStrategy over two logical CPU devices gives the single-device run.

Logical devices must be configured before TensorFlow initialises, so the check runs in a fresh
subprocess (it cannot disturb the other tests' TensorFlow).
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import json, time
    t0 = time.time()
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import gpflow
    import numpy as np
    from gpflow_ext.training import fit

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    rng = np.random.default_rng(0)

    def values(model):
        return {k: np.array(v.numpy()) for k, v in gpflow.utilities.parameter_dict(model).items()}

    def diff(a, b):
        return max(float(np.max(np.abs(a[k] - b[k]))) for k in a)

    def svgp(X):
        return gpflow.models.SVGP(gpflow.kernels.SquaredExponential(lengthscales=[1.0, 1.0]),
                                  gpflow.likelihoods.Gaussian(variance=0.5), X[:5].copy(), num_data=len(X))

    out = {"replicas": strategy.num_replicas_in_sync}
    # N=41, B=20: batches of 20, 20, 1 -> replica shares 10/10 and 0/1 (an empty replica)
    for name, n, batch in [("minibatch", 41, 20)]:
        X = rng.normal(size=(n, 2)); Y = np.sin(X[:, :1]) + 0.1 * rng.normal(size=(n, 1))
        kwargs = dict(epochs=2, batch_size=batch, learning_rate=0.05, seed=4, progress=False)
        single = svgp(X)
        h1 = fit(single, (X, Y), **kwargs)
        with strategy.scope():
            multi = svgp(X)
        h2 = fit(multi, (X, Y), strategy=strategy, **kwargs)
        out[name] = {"objective_single": h1.objective, "objective_mirrored": h2.objective,
                     "param_diff": diff(values(single), values(multi))}

    X = rng.normal(size=(15, 2)); Y = np.sin(X[:, :1])
    single = gpflow.models.GPR((X, Y), gpflow.kernels.SquaredExponential())
    h1 = fit(single, epochs=2, learning_rate=0.1, progress=False)
    with strategy.scope():
        multi = gpflow.models.GPR((X, Y), gpflow.kernels.SquaredExponential())
    h2 = fit(multi, epochs=2, learning_rate=0.1, strategy=strategy, progress=False)
    out["gpr"] = {"objective_single": h1.objective, "objective_mirrored": h2.objective,
                  "param_diff": diff(values(single), values(multi))}

    class Local(gpflow.models.BayesianModel, gpflow.models.ExternalDataTrainingLossMixin):
        # per-row parameters gathered by a row-index column: IndexedSlices gradients across replicas
        def __init__(self, n):
            super().__init__()
            self.local = gpflow.Parameter(np.zeros((n, 1)))
            self.scale = gpflow.Parameter(1.0, transform=gpflow.utilities.positive())
            self.n = n

        def maximum_log_likelihood_objective(self, data):
            rows, Y = data
            fitted = self.scale * tf.gather(self.local, rows)
            return -self.n / tf.cast(tf.shape(rows)[0], Y.dtype) * tf.reduce_sum((Y - fitted) ** 2)

    rows = np.arange(15)
    single = Local(15)
    h1 = fit(single, (rows, Y), epochs=2, batch_size=4, learning_rate=0.1, progress=False)
    with strategy.scope():
        multi = Local(15)
    h2 = fit(multi, (rows, Y), epochs=2, batch_size=4, learning_rate=0.1, strategy=strategy, progress=False)
    out["local"] = {"objective_single": h1.objective, "objective_mirrored": h2.objective,
                    "param_diff": diff(values(single), values(multi))}

    single = svgp(X)  # built outside the scope: refused with a clear error
    try:
        fit(single, (X, Y), epochs=1, strategy=strategy, progress=False)
        out["outside_scope_error"] = None
    except ValueError as err:
        out["outside_scope_error"] = str(err)
    out["seconds"] = time.time() - t0
    print("RESULT " + json.dumps(out))
    """
)


def test_mirrored_strategy_on_two_logical_cpus_matches_one_device():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(lines[-1][len("RESULT "):])
    assert out["replicas"] == 2
    for case in ("minibatch", "gpr", "local"):
        single, mirrored = out[case]["objective_single"], out[case]["objective_mirrored"]
        assert len(single) == len(mirrored) == 2
        for a, b in zip(single, mirrored):
            assert abs(a - b) <= 1e-9 * max(1.0, abs(a)), (case, single, mirrored)
        assert out[case]["param_diff"] <= 1e-9, (case, out[case]["param_diff"])
    assert "created outside strategy.scope()" in out["outside_scope_error"]


def test_only_the_chief_writes_under_a_multi_worker_strategy():
    from types import SimpleNamespace

    import tensorflow as tf

    from gpflow_ext.training.distribute import is_chief

    def strategy(cluster, task_type, task_id):
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            tf.train.ClusterSpec(cluster), task_type=task_type, task_id=task_id)
        return SimpleNamespace(cluster_resolver=resolver, extended=SimpleNamespace(_in_multi_worker_mode=lambda: True))

    workers = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}
    assert is_chief(None)
    assert is_chief(strategy(workers, "worker", 0)) and not is_chief(strategy(workers, "worker", 1))
    with_chief = {"chief": ["127.0.0.1:0"], **workers}
    assert is_chief(strategy(with_chief, "chief", 0)) and not is_chief(strategy(with_chief, "worker", 0))
