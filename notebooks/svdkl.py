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
# # SV-DKL: stochastic variational deep kernel learning with gpflow_ext
#
# This notebook shows a GPflow/Keras user how to put Gaussian processes on top of any
# `tf_keras` network (Wilson et al., *Stochastic Variational Deep Kernel Learning*, 2016):
#
# 1. a feature extractor `h(x; w)` (here a small MLP) produces Q features;
# 2. J additive GPs act on them (one per feature), each with inducing values on a KISS-GP grid
#    and local cubic interpolation, `f_j = W_j u_j`;
# 3. a mixing matrix `A` and a softmax give the class probabilities (eq. 1);
# 4. everything — network weights included — is trained through the variational bound (eq. 4).
#
# Set `GPFLOW_EXT_QUICK=1` for a fast run (the tests do).

# %%
import os

import numpy as np
import tensorflow as tf
import gpflow
from gpflow.keras import tf_keras

import gpflow_ext
from gpflow_ext.data import load_digits
from gpflow_ext.inducing_variables import GridInducingPoints
from gpflow_ext.inducing_variables.grid import interpolation_indices_and_weights, interpolate
from gpflow_ext.models import SVDKL
from gpflow_ext.recipes.svdkl import pretrain_and_fit
from gpflow_ext.variational import KISSGPGrid

QUICK = os.environ.get("GPFLOW_EXT_QUICK", "0") == "1"
tf_keras.utils.set_random_seed(0)

# %% [markdown]
# ## KISS-GP interpolation in one picture
# A grid of m inducing inputs and Keys' cubic convolution: each point gets 4 non-zero weights,
# so `f(x) = Σ_k w_k(x) u_{i_k(x)}` costs O(1) per point whatever m is.

# %%
grid = GridInducingPoints(32, lower=-1.0, upper=1.0)
x = np.linspace(-1, 1, 200)[:, None]
indices, weights = interpolation_indices_and_weights(grid, x)
print("indices", indices.shape, "weights", weights.shape)  # [200, 4] each: W is never dense
u = np.sin(4 * grid.Z.numpy())
f = interpolate(indices, weights, tf.constant(u)).numpy()
print("max interpolation error of sin(4x):", np.abs(f - np.sin(4 * x)).max())

# %% [markdown]
# ## Data and network
# scikit-learn's 8×8 digits; the network's 10 outputs are the GP layer's inputs.

# %%
split = load_digits(test_fraction=0.25, seed=0)
if QUICK:
    keep = np.random.default_rng(0).permutation(len(split.X_train))[:500]
    X_train, y_train = split.X_train[keep], split.y_train[keep]
else:
    X_train, y_train = split.X_train, split.y_train
X_test, y_test = split.X_test, split.y_test

F64 = gpflow.default_float()
network = tf_keras.Sequential([
    tf_keras.Input((64,), dtype=F64),
    tf_keras.layers.Dense(64, activation="relu", dtype=F64),
    tf_keras.layers.Dense(10, dtype=F64),
])
# a linear class-score mean, logits = A f(h) + m(h): the schedule sets m to the network's head and the GPs to a
# zero residual, so DNN+GP starts exactly where the network ends (without it, the paper's zero mean)
model = SVDKL(network, num_classes=10, num_data=len(X_train), inducing=KISSGPGrid(32),
              mean_function=gpflow.mean_functions.Linear(np.zeros((10, 10)), np.zeros(10)))
gpflow.utilities.print_summary(model.likelihood)

# %% [markdown]
# ## Section 5 in one call
# Network with a softmax head (DNN) → GP layer on the frozen features (DNN+GP), started where the network
# ends → joint training (SV-DKL). Every stage runs through `gpflow_ext.training.fit` and keeps its epoch with
# the best NLP on a validation split of the training rows (never less accurate there than its start); the
# test rows are only scored.

# %%
epochs = (3, 2, 2) if QUICK else (30, 10, 20)
out = pretrain_and_fit(
    model, (X_train, y_train),
    network_epochs=epochs[0], gp_epochs=epochs[1], joint_epochs=epochs[2],
    batch_size=128, joint_learning_rate=1e-3, test_data=(X_test, y_test),
    progress=True,  # tqdm's text bar per stage (no ipywidgets needed)
)
for stage in ("dnn", "dnn_gp", "svdkl"):
    print(f"{stage:7s} accuracy {out[stage]['accuracy']:.4f}  NLP {out[stage]['nlp']:.4f}")
print("epoch kept by each stage (0: its start):", out["chosen_epoch"])

# %% [markdown]
# ## Predictions and the learned deep kernel (the paper's Figure 3)
# `predict_proba` averages softmax(A f) over samples of q(u). The deep kernel
# Σ_j k_j(h_j(x), h_j(x')) on test points sorted by class shows the block structure
# the network learned; A shows how the GPs are mixed into class scores.

# %%
probs = model.predict_proba(X_test[:5], num_samples=32)
print(np.round(probs, 3))
order = np.argsort(y_test)[::3]
K = model.deep_kernel(X_test[order])

import matplotlib.pyplot as plt

fig, axes = plt.subplots(1, 2, figsize=(10, 4))
axes[0].imshow(K)
axes[0].set_title("deep kernel, test points sorted by class")
axes[1].imshow(model.likelihood.mixing.numpy(), cmap="RdBu_r")
axes[1].set_title("mixing matrix A")
plt.show()
