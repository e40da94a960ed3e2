"""GPLVF on images with missing pixels (paper Section 4.1, Figures 1-3): MNIST and scikit-learn's digits.

:class:`ImputationConfig` and :func:`run_imputation`: drop a fraction of each image's pixels, train a Gaussian and
a planar-flow q(X) on the same data, report the imputation RMSE of the missing pixels beside mean imputation, and
draw Figures 1-3 (:func:`make_figures`) to PNG and TensorBoard (:func:`save_figures`). :func:`digits_config`: the
tour's setting on scikit-learn's 8x8 digits (no download). :func:`run_binary_imputation`: pixels binarised at 1/2,
a Gaussian and a Bernoulli GPLVF (Gaussian q(X)) and mean imputation judged by accuracy and log-likelihood of the
missing pixels (:func:`binary_pixel_metrics`).
"""

import dataclasses
import time
from pathlib import Path

import gpflow
import numpy as np
import scipy.sparse as sp
import tensorflow as tf
from scipy.special import logsumexp

from ..bijectors import planar_flow
from ..models.gplvf import GPLVF
from .gplvf import train_with_fit
from .gplvf_likelihoods import rating_log_probabilities

__all__ = [
    "drop_pixels",
    "imputation_rmse",
    "mean_imputation_rmse",
    "train_imputer",
    "latent_samples",
    "decode",
    "make_figures",
    "save_figures",
    "ImputationConfig",
    "run_imputation",
    "digits_config",
    "binary_pixel_metrics",
    "run_binary_imputation",
    "load_digits_images",
]


def drop_pixels(images: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """NaN at a random ``fraction`` of the pixels of each image (at least one pixel kept)."""
    rng = np.random.default_rng(seed)
    missing = rng.random(images.shape) < fraction
    empty = missing.all(axis=1)
    missing[empty, rng.integers(0, images.shape[1], empty.sum())] = False
    return np.where(missing, np.nan, images)


def imputation_rmse(model: GPLVF, images: np.ndarray, observed_input: np.ndarray, num_samples: int = 20) -> float:
    """RMSE of the predictive mean at the missing pixels of the training rows (q(x_n) from training)."""
    mean, _ = model.predict_y_marginal(*model.training_latents(), num_samples=num_samples)
    missing = np.isnan(observed_input)
    return float(np.sqrt(np.mean((np.clip(mean.numpy(), 0, 1)[missing] - images[missing]) ** 2)))


def mean_imputation_rmse(images: np.ndarray, observed_input: np.ndarray) -> float:
    """RMSE over the missing pixels (NaN in ``observed_input``) of filling each with its column's observed mean
    (the overall observed mean for a column with none observed), the baseline the imputers are compared with."""
    column_mean = np.nanmean(observed_input, axis=0)
    column_mean = np.where(np.isnan(column_mean), np.nanmean(observed_input), column_mean)
    missing = np.isnan(observed_input)
    filled = np.broadcast_to(column_mean, images.shape)
    return float(np.sqrt(np.mean((filled[missing] - images[missing]) ** 2)))


def train_imputer(
    observed_input,
    flow_length,
    *,
    latent_dim,
    num_inducing,
    epochs,
    batch_size,
    learning_rate,
    seed,
    num_samples=1,
    identity_at_zero=True,
    flow_learning_rate=None,
    logdir=None,
    progress=False,
    likelihood=None,
):
    """A GPLVF (noise variance 0.02, or ``likelihood``) with ``flow_length`` planar layers trained by
    :func:`train_with_fit`; ``flow_learning_rate``: the flow's own Adam rate (None = shared)."""
    tf.random.set_seed(seed)
    flow = planar_flow(flow_length, latent_dim, seed=seed, identity_at_zero=identity_at_zero) if flow_length else None
    noise = {"noise_variance": 0.02} if likelihood is None else {"likelihood": likelihood}
    model = GPLVF(observed_input, latent_dim, num_inducing, flow=flow, num_samples=num_samples, seed=seed, **noise)
    rates = {"flow": flow_learning_rate} if flow_length and flow_learning_rate is not None else None
    history = train_with_fit(
        model,
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
        seed=seed,
        group_learning_rates=rates,
        logdir=logdir,
        progress=progress,
    )
    return model, history


def latent_samples(model: GPLVF, row: int, num: int, seed: int = 0) -> np.ndarray:
    """Samples of q(x_row) (base Gaussian pushed through the model's flow) [num, Q]."""
    x_mean, x_var = (v[row : row + 1] for v in model.training_latents())
    return model.latent_draws(x_mean, x_var, model.base_noise(1, num, seed)).numpy()[:, 0]


def decode(model: GPLVF, x: np.ndarray) -> np.ndarray:
    """The predicted mean images of latent points ``x`` [N, Q], clipped to [0, 1]."""
    mean, _ = model.predict_f(tf.constant(x))
    return np.clip(mean.numpy(), 0, 1)


def make_figures(models: dict[str, GPLVF], images, observed_input, side: int, row: int = 0, seed: int = 0):
    """Figures 1-3 as matplotlib figures (names -> Figure)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = {}
    colours = {"flow": "tab:green", "gaussian": "tab:blue"}
    fig, ax = plt.subplots(figsize=(4.5, 4))
    for name, model in models.items():
        x = latent_samples(model, row, 2000, seed)
        ax.scatter(x[:, 0], x[:, 1], s=2, alpha=0.3, c=colours.get(name, None), label=f"{name} q(x_n)")
    ax.set_title("Figure 1: latent q(x_n) of one digit")
    ax.legend(markerscale=5)
    fig.tight_layout()
    figures["figure1_latent_density"] = fig

    fig, axes = plt.subplots(len(models), 1, figsize=(8, 2.2 * len(models)))
    axes = np.atleast_1d(axes)
    rng = np.random.default_rng(seed)
    rows = rng.choice(images.shape[0], 8, replace=False)
    for ax, (name, model) in zip(axes, models.items()):
        tiles = [decode(model, latent_samples(model, int(r), 3, seed)) for r in rows]  # 8 x [3, D]
        grid = np.concatenate([np.concatenate([t.reshape(-1, side, side)[k] for t in tiles], 1) for k in range(3)], 0)
        ax.imshow(grid, cmap="gray")
        ax.set_title(f"Figure 2: digits decoded from {name} q(X) samples")
        ax.axis("off")
    fig.tight_layout()
    figures["figure2_samples"] = fig

    fig, axes = plt.subplots(1, 2 + len(models), figsize=(2.2 * (2 + len(models)), 2.6))
    axes[0].imshow(images[row].reshape(side, side), cmap="gray")
    axes[0].set_title("true")
    shown = np.where(np.isnan(observed_input[row]), 0.5, observed_input[row])
    axes[1].imshow(shown.reshape(side, side), cmap="gray")
    axes[1].set_title("input (40% missing)")
    for ax, (name, model) in zip(axes[2:], models.items()):
        samples = decode(model, latent_samples(model, row, 4, seed)).reshape(4, side, side)
        ax.imshow(np.concatenate([np.concatenate(samples[:2], 1), np.concatenate(samples[2:], 1)], 0), cmap="gray")
        ax.set_title(f"{name} samples")
    for ax in axes:
        ax.axis("off")
    fig.tight_layout()
    figures["figure3_reconstructions"] = fig
    return figures


def save_figures(figures, figure_dir: Path | None, logdir: Path | None, prefix: str = "gplvf_mnist"):
    """Each figure as ``figure_dir/{prefix}_{name}.png`` and as a TensorBoard image under ``logdir``."""
    import matplotlib.pyplot as plt

    if figure_dir is not None:
        Path(figure_dir).mkdir(parents=True, exist_ok=True)
    writer = tf.summary.create_file_writer(str(logdir)) if logdir is not None else None
    for name, fig in figures.items():
        if figure_dir is not None:
            fig.savefig(Path(figure_dir) / f"{prefix}_{name}.png", dpi=110)
        if writer is not None:
            fig.canvas.draw()
            image = np.asarray(fig.canvas.buffer_rgba())[None, ..., :3]
            with writer.as_default():
                tf.summary.image(name, image, step=0)
        plt.close(fig)
    if writer is not None:
        writer.flush()


@dataclasses.dataclass
class ImputationConfig:
    """A Gaussian and a planar-flow q(X) on images with ``missing_fraction`` of the pixels dropped."""

    side: int = 14
    flow_length: int = 10
    latent_dim: int = 2
    num_inducing: int = 50
    epochs: int = 200
    batch_size: int = 200
    learning_rate: float = 0.01
    flow_learning_rate: float | None = 1e-3
    missing_fraction: float = 0.4
    identity_at_zero: bool = True
    seed: int = 0
    figure_dir: Path | None = None
    logdir: Path | None = None
    prefix: str = "gplvf_mnist"
    progress: bool = False
    likelihood: str = "gaussian"


def run_imputation(images: np.ndarray, config: ImputationConfig) -> dict[str, float]:
    """Train both models on ``images`` [N, side²] in [0, 1] with pixels dropped; ``logdir`` gets each model's
    training logs (``gaussian``, ``flow``) and the figures. Returns RMSEs, seconds per epoch and final bounds."""
    observed_input = drop_pixels(images, config.missing_fraction, config.seed)
    results = {
        "mean_imputation_rmse": mean_imputation_rmse(images, observed_input),
        "missing_fraction": float(np.isnan(observed_input).mean()),
        "num_rows": int(images.shape[0]),
    }
    models = {}
    for name, length in (("gaussian", 0), ("flow", config.flow_length)):
        start = time.time()
        model, history = train_imputer(
            observed_input,
            length,
            latent_dim=config.latent_dim,
            num_inducing=config.num_inducing,
            epochs=config.epochs,
            batch_size=config.batch_size,
            learning_rate=config.learning_rate,
            seed=config.seed,
            identity_at_zero=config.identity_at_zero,
            flow_learning_rate=config.flow_learning_rate,
            logdir=None if config.logdir is None else Path(config.logdir) / name,
            progress=config.progress,
        )
        models[name] = model
        results[f"{name}_imputation_rmse"] = imputation_rmse(model, images, observed_input)
        results[f"{name}_seconds_per_epoch"] = history.median_seconds_per_epoch()
        results[f"{name}_final_elbo"] = -history.final_objective
        results[f"{name}_train_seconds"] = time.time() - start
    if config.figure_dir is not None or config.logdir is not None:
        figures = make_figures(models, images, observed_input, config.side, seed=config.seed)
        save_figures(figures, config.figure_dir, config.logdir, config.prefix)
    return results


def load_digits_images(quick: bool = True) -> np.ndarray:
    """scikit-learn's 8x8 digits in [0, 1] [1797, 64] (the first 600 when ``quick``)."""
    from ..data import load_digits

    images = load_digits(test_fraction=0).X_train
    return images[:600] if quick else images


def digits_config(
    quick: bool = True, *, epochs: int | None = None, seed: int = 0, logdir=None, progress: bool = False
) -> ImputationConfig:
    """The tour's setting on scikit-learn's digits: planar-4, Q = 5, M = 25, batch 100, Adam 0.02 with the flow's
    shared parameters at their own rate 1e-3 (at the shared rate the flow's bound ended below the Gaussian's),
    40 (quick) or 200 epochs."""
    return ImputationConfig(
        side=8,
        flow_length=4,
        latent_dim=5,
        num_inducing=25,
        epochs=epochs if epochs is not None else (40 if quick else 200),
        batch_size=100,
        learning_rate=0.02,
        flow_learning_rate=1e-3,
        seed=seed,
        logdir=logdir,
        progress=progress,
    )


def binary_pixel_metrics(p_one: np.ndarray, pixels: np.ndarray) -> dict[str, float]:
    """Accuracy of thresholding P(pixel = 1) at 1/2 and the mean log-likelihood of the binary ``pixels`` [P]
    under the predictive probabilities ``p_one`` [P]."""
    p_one = np.asarray(p_one, dtype=np.float64)
    log_lik = np.where(pixels == 1, np.log(p_one), np.log1p(-p_one))
    return {"accuracy": float(np.mean((p_one > 0.5) == (pixels == 1))), "loglik": float(np.mean(log_lik))}


def run_binary_imputation(images: np.ndarray, config: ImputationConfig, num_samples: int = 20) -> dict[str, float]:
    """Pixels binarised at 1/2, ``missing_fraction`` dropped; per method the accuracy and mean log-likelihood of the
    missing pixels (:func:`binary_pixel_metrics`): mean imputation (each pixel's observed frequency, clipped to
    [1e-3, 1 - 1e-3], the Bernoulli likelihood's own floor), a Gaussian GPLVF (P(pixel = 1) = its predictive mass
    above 1/2, averaged over q(x_n)) and a Bernoulli GPLVF (its predictive probability averaged over q(x_n)); both
    GPLVFs with a Gaussian q(X) and ``num_samples`` draws of q(x_n)."""
    binary = (images > 0.5).astype(np.float64)
    observed_input = drop_pixels(binary, config.missing_fraction, config.seed)
    missing = np.isnan(observed_input)
    rows, cols = np.nonzero(missing)
    frequency = np.nanmean(observed_input, axis=0)
    frequency = np.clip(np.where(np.isnan(frequency), np.nanmean(observed_input), frequency), 1e-3, 1 - 1e-3)
    results = {f"mean_imputation_{k}": v for k, v in binary_pixel_metrics(frequency[cols], binary[missing]).items()}
    results.update(missing_fraction=float(missing.mean()), num_rows=int(images.shape[0]))
    for name, likelihood in (("gaussian", None), ("bernoulli", gpflow.likelihoods.Bernoulli())):
        start = time.time()
        model, history = train_imputer(
            observed_input, 0, latent_dim=config.latent_dim, num_inducing=config.num_inducing, epochs=config.epochs,
            batch_size=config.batch_size, learning_rate=config.learning_rate, seed=config.seed,
            logdir=None if config.logdir is None else Path(config.logdir) / name, progress=config.progress,
            likelihood=likelihood,
        )  # fmt: skip
        x_mean, x_var = model.training_latents()
        if likelihood is None:
            target = sp.coo_matrix((np.ones(rows.size), (rows, cols)), shape=binary.shape)
            log_p = rating_log_probabilities(model, x_mean, x_var, target, (0.0, 1.0), None, num_samples, config.seed)
            p_one = np.exp(logsumexp(log_p[..., 1], axis=0) - np.log(num_samples))  # [P]
        else:
            p_one = model.predict_y_marginal(x_mean, x_var, num_samples=num_samples, seed=config.seed)[0].numpy()
            p_one = p_one[rows, cols]
        for key, value in binary_pixel_metrics(p_one, binary[missing]).items():
            results[f"{name}_{key}"] = value
        results[f"{name}_seconds_per_epoch"] = history.median_seconds_per_epoch()
        results[f"{name}_final_elbo"] = -history.final_objective
        results[f"{name}_train_seconds"] = time.time() - start
    return results
