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
# # GPLVF: a Bayesian GPLVM with a planar-flow q(X) for data with missing entries
#
# This notebook trains `gpflow_ext.models.GPLVF` ("Gaussian process latent variable flows") on
# scikit-learn's 8x8 digits with 40 % of the pixels removed, and imputes them.
#
# * the data are a matrix with `NaN` where a value is missing; the bound only sums the observed
#   entries (paper eq. 5), nothing is imputed during training;
# * q(x_n) is a Gaussian pushed through a chain of planar flows shared by all rows (eq. 4);
# * the bound factorises over rows, so we train on minibatches of rows (eq. 22-23).
#
# Set `GPFLOW_EXT_QUICK=1` for a very short run (the tests do).

# %%
import os

import numpy as np
import tensorflow as tf
import gpflow

import gpflow_ext
from gpflow_ext.bijectors import planar_flow
from gpflow_ext.data import load_digits
from gpflow_ext.models import GPLVF

quick = os.environ.get("GPFLOW_EXT_QUICK", "0") == "1"
rng = np.random.default_rng(0)
images = load_digits(test_fraction=0).X_train  # [1797, 64], pixels in [0, 1]
images = images[:150] if quick else images
observed = np.where(rng.random(images.shape) < 0.4, np.nan, images)  # 40 % missing
print(images.shape, f"{np.isnan(observed).mean():.0%} missing")

# %% [markdown]
# ## The model
# `flow=None` gives the Gaussian q(X) baseline; `planar_flow(K, Q)` a chain of K planar maps.

# %%
model = GPLVF(observed, latent_dim=5, num_inducing=10 if quick else 25, flow=planar_flow(3, 5), noise_variance=0.02)
gpflow.utilities.print_summary(model.kernel)

# %% [markdown]
# ## Training on minibatches of rows
# `model.training_data()` is `(values, mask, row_index)`; the row index picks each row's q(x_n).
# `gpflow_ext.training.fit` trains on shuffled minibatches of rows (`model.training_loss(batch)`),
# with TensorBoard and checkpoints when given a `logdir`.
#
# `model.parameter_groups()` splits the variables into the flow's shared parameters, each row's
# q(x_n) and everything else. The flow sees every minibatch, so it gets its own, smaller Adam rate:
# on these digits a flow at 1e-3 (everything else at 0.02) ends with a bound about 125 nats above
# the Gaussian q(X), while at the shared rate it ends below it (README, GPLVF section).

# %%
from gpflow_ext.training import adam_by_group, fit

print({name: len(variables) for name, variables in model.parameter_groups().items()})
optimizer = adam_by_group(model.parameter_groups(), {"flow": 1e-3}, 0.02)
history = fit(model, model.training_data(), epochs=3 if quick else 60, batch_size=50, optimizer=optimizer,
              progress=False)
print("final epoch objective", history.final_objective)

# %% [markdown]
# ## Imputing the missing pixels
# `predict_y_marginal` averages the GP prediction over samples of q(x_n) (mean and variance per entry);
# `predict_f` / `predict_y` are GPflow's, at given latent points.

# %%
mean, var = (t.numpy() for t in model.predict_y_marginal(*model.training_latents(), num_samples=20))
missing = np.isnan(observed)
column_mean = np.nanmean(observed, axis=0)
rmse = np.sqrt(np.mean((np.clip(mean, 0, 1)[missing] - images[missing]) ** 2))
rmse_mean = np.sqrt(np.mean((np.broadcast_to(column_mean, images.shape)[missing] - images[missing]) ** 2))
print(f"imputation RMSE: GPLVF {rmse:.4f}, column means {rmse_mean:.4f}")

# %% [markdown]
# Five digits: the original, what the model saw (missing pixels in red) and the imputed image
# (observed pixels kept, missing ones from `predict_y_marginal`).

# %%
import matplotlib.pyplot as plt

imputed = np.where(missing, np.clip(mean, 0, 1), images)
fig, axes = plt.subplots(3, 5, figsize=(7, 4.4))
for column in range(5):
    seen = plt.cm.gray_r(np.nan_to_num(observed[column], nan=0.0).reshape(8, 8))
    seen[missing[column].reshape(8, 8)] = (0.85, 0.2, 0.2, 1.0)
    for row, image in enumerate((images[column].reshape(8, 8), seen, imputed[column].reshape(8, 8))):
        axes[row, column].imshow(image, cmap="gray_r", vmin=0, vmax=1)
        axes[row, column].set_axis_off()
for row, title in enumerate(("original", "observed (missing in red)", "GPLVF imputation")):
    axes[row, 0].set_title(title, loc="left", fontsize=9)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## New rows
# For a new, partially observed row, `gpflow_ext.recipes.gplvf.infer_latent` fits only its q(x*) with the
# model fixed (through `gpflow_ext.training.fit`);
# `test_log_likelihood` is the paper's eq. 33 (Monte Carlo over x*).

# %%
new = observed[:5].copy()
from gpflow_ext.recipes.gplvf import infer_latent

mu, s = infer_latent(model, new, num_steps=20 if quick else 200)
held_out = np.where(missing[:5], images[:5], np.nan)  # score the pixels we never showed
print("test log-likelihood per pixel:", model.test_log_likelihood(held_out, mu, s, num_samples=20))
