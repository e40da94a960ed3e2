# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Subspace inducing inputs and MLGPF on Bibtex
#
# *Fully scalable Gaussian processes using subspace inducing inputs* (Panos, Dellaportas, Titsias)
# as GPflow pieces:
#
# 1. **Subspace inducing inputs** `Z = A X̃` (eq. 4): X̃ [R, D] are the R leading right-singular
#    vectors of X, only A [M, R] is trained, and `Kuu`/`Kuf` cost O(RM² + B·R·M) per step whatever D is.
# 2. **The preconditioned q(u)**: `m = Kμ`, `S = (K⁻¹ + Σ⁻¹)⁻¹` with 2M parameters per latent GP (eq. 8);
#    the bound only factorises `K + Σ`.
# 3. **MLGPF** (Section 3): P latent GPs mixed by loadings Φ [K, P] and bias b into K label
#    utilities, Bernoulli-logit labels, trained by the stochastic bound of eq. 23.
#
# Set `GPFLOW_EXT_QUICK=1` for a small run (a subset and a few epochs: what the tests execute);
# unset it for the paper's settings (P=30, M=500, R=1000, |B|=500, 400 epochs — hours on 2 cores).

# %%
import os

import gpflow
import numpy as np

import gpflow_ext
from gpflow_ext.data import load_multilabel
from gpflow_ext.inducing_variables import SubspaceInducingPoints
from gpflow_ext.recipes.mlgpf import build_mlgpf
from gpflow_ext.recipes.mlgpf_config import paper_config
from gpflow_ext.training import fit

QUICK = os.environ.get("GPFLOW_EXT_QUICK", "0") not in ("", "0")
train, test = load_multilabel("bibtex")  # $GPFLOW_EXT_DATA/bibtex/ (Mulan ARFF)
X_train, Y_train, X_test, Y_test = train.X, train.Y, test.X, test.Y
if QUICK:
    X_train, Y_train, X_test, Y_test = X_train[:1000], Y_train[:1000], X_test[:500], Y_test[:500]
print(f"train {X_train.shape}, test {X_test.shape}, labels K={Y_train.shape[1]}, "
      f"{X_train.nnz / X_train.shape[0]:.1f} non-zero features per row (sparse CSR)")

# %% [markdown]
# ## Subspace inducing inputs
#
# `from_data` takes a truncated SVD of the sparse X (never densified) and initialises A by k-means
# on U·S. The kernel matrices equal those of explicit inducing points `A @ X̃`:

# %%
M, R, P = (50, 100, 10) if QUICK else (500, 1000, 30)
iv = SubspaceInducingPoints.from_data(X_train, num_inducing=M, rank=R, seed=0)
kernel = gpflow.kernels.Linear(variance=1.0 / np.mean(X_train.multiply(X_train).sum(axis=1)))
explicit = gpflow.inducing_variables.InducingPoints(iv.Z.numpy())
Kuf_subspace = gpflow.covariances.Kuf(iv, kernel, gpflow_ext.utilities.to_input_tensor(X_train[:5]))
Kuf_explicit = gpflow.covariances.Kuf(explicit, kernel, X_train[:5].toarray())
print("max |Kuf(subspace) - Kuf(A X̃)| =", float(np.max(np.abs(Kuf_subspace - Kuf_explicit))))
print(f"trainable inducing parameters: subspace {M * R:,} vs free Z {M * X_train.shape[1]:,}")

# %% [markdown]
# ## MLGPF
#
# `build_mlgpf(paper_config(method, ...), X, Y)` builds the paper's variants by name: `s-linear`, `linear`, `s-se`, `se`
# (optimised subspace / free Z, linear / squared-exponential kernel) and `sf-…`, `f-…` (kept fixed).
# Labels stay sparse; `num_negative_samples` sub-samples negative labels per instance (eq. 23) for
# very large K. `fit` trains on CSR minibatches and logs the bound to TensorBoard.

# %%
config = paper_config("s-linear", "bibtex", num_inducing=M, num_latent_gps=P, rank=R)
model = build_mlgpf(config, X_train, Y_train)  # a gpflow_ext.models.MLGPF
data = model.prepare_data(X_train, Y_train)  # checks D, K, NaN, 0/1 labels
epochs = 5 if QUICK else 400
history = fit(model, data, epochs=epochs, batch_size=500, learning_rate=0.03, progress=False)
print("bound per epoch:", np.round(-np.array(history.objective), 1))
print(f"{history.median_seconds_per_epoch():.2f} s/epoch")

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(np.arange(1, len(history.objective) + 1), -np.array(history.objective), marker="o")
ax.set_xlabel("epoch")
ax.set_ylabel("stochastic bound (eq. 23), epoch mean")
ax.set_title("MLGPF s-LINEAR on Bibtex: bound per epoch")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Prediction and ranking
#
# Labels are ranked by the mean utilities f̄ = Φ m* + b (Appendix A.3); P@k and nDCG@k come from
# `gpflow_ext.metrics`. Predictive probabilities E[σ(f)] are available by quadrature.

# %%
scores = model.evaluate(X_test, Y_test)
print({k: round(v, 2) for k, v in scores.items()})
print("paper (s-LINEAR, Table 2): P@1 59.31, P@3 36.73, P@5 27.40")
probabilities = model.predict_probabilities(gpflow_ext.utilities.to_input_tensor(X_test[:3])).numpy()
print("top-3 labels of the first test point:", np.argsort(-probabilities[0])[:3],
      "true:", Y_test[0].indices)
