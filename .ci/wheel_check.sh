#!/usr/bin/env bash
# Builds the sdist and wheel, rebuilds a wheel from the sdist alone, installs that wheel with its
# runtime dependencies only into a fresh virtual environment (pip's cache is reused), and there
# imports gpflow_ext and trains a stock SVGP for 2 epochs with gpflow_ext.training.fit.
# Prints the runtime dependency count and the time taken.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
PY=${PYTHON:-python}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpflow_ext_wheel.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

"$PY" -m pip install --disable-pip-version-check -q build
"$PY" -m build --sdist --wheel -o "$WORK/dist" . > "$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; exit 1; }
# the sdist alone must be enough to build the wheel
"$PY" -m pip wheel --disable-pip-version-check --no-deps -q -w "$WORK/from_sdist" "$WORK"/dist/gpflow_ext-*.tar.gz
WHEEL=$(ls "$WORK"/from_sdist/gpflow_ext-*.whl)
echo "built $(basename "$WHEEL") from $(basename "$WORK"/dist/gpflow_ext-*.tar.gz)"

"$PY" -m venv "$WORK/venv"
VPY="$WORK/venv/bin/python"
"$VPY" -m pip install --disable-pip-version-check -q "$WHEEL"

cd "$WORK"  # away from the source tree: the installed wheel is what gets imported
TF_CPP_MIN_LOG_LEVEL=2 "$VPY" - <<'PY'
import numpy as np
import gpflow
import gpflow_ext
from gpflow_ext.inducing_variables import SubspaceInducingPoints

assert "site-packages" in gpflow_ext.__file__, gpflow_ext.__file__
rng = np.random.default_rng(0)
X = rng.normal(size=(50, 3))
Y = np.sin(X.sum(1, keepdims=True)) + 0.1 * rng.normal(size=(50, 1))
for iv in (gpflow.inducing_variables.InducingPoints(X[:10].copy()),
           SubspaceInducingPoints.from_data(X, num_inducing=10, rank=3)):
    model = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(),
                               iv, num_data=len(X))
    logdir = f"runs/{type(iv).__name__}"  # TensorBoard logging and checkpoints work with the runtime set
    gpflow_ext.training.fit(model, (X, Y), epochs=2, batch_size=25, progress=False, logdir=logdir)
    loss = float(model.training_loss((X, Y)))
    assert np.isfinite(loss), loss
    print(f"gpflow_ext {gpflow_ext.__version__}: SVGP + {type(iv).__name__}, 2 epochs, loss {loss:.3f}")
PY
DEPS=$("$VPY" -m pip list --disable-pip-version-check --format=freeze 2>/dev/null \
  | grep -v -i -E '^(pip|setuptools|gpflow_ext|gpflow-ext)==')
echo "runtime dependencies installed with the wheel (all transitive, pip/setuptools excluded): $(echo "$DEPS" | wc -l)"
echo "$DEPS" | tr '\n' ' '; echo
echo "wheel check took $(( $(date +%s) - start )) s"
