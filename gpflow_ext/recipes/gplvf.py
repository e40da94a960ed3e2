"""GPLVF's paper settings (Gaussian process latent variable flows): kernels, the encoder, training, new rows.

* :func:`make_kernel` / :data:`KERNEL_NAMES`: the GP prior's covariance on R^Q by name; :func:`build_encoder`:
  the back-constraint network of the amortised q(x_n).
* :func:`train_gplvf`: build a GPLVF with ``flow_length`` planar layers and train it with
  ``gpflow_ext.training.fit`` (:func:`train_with_fit`: per-group Adam rates, learning-rate decay, optional
  natural gradients for q(u)); :class:`GPLVFTraining` holds those settings as one config.
* :func:`infer_latent`: the test-time fit of q(x*) for new, partially observed rows, model fixed.
* :class:`BaseGaussianKLAblation` and :data:`KL_X_CHOICES`: the KL(q(x)) choices of the experiments (the
  ablation is biased and never a default).
* :func:`flow_summaries`: how far the trained flow takes each row's q(x_n) from a Gaussian.
"""

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.config import default_float
from gpflow.keras import tf_keras

from ..bijectors import flow_local_nonlinearity, planar_flow
from ..bijectors.planar import flow_forward_and_log_det
from ..kullback_leiblers import LatentKL, MonteCarloFlowKL, flow_kl_to_standard_normal, gaussian_kl_to_standard_normal
from ..latents import BASE_COVARIANCE_NAMES
from ..likelihoods.masked import likelihood_and_mean_for
from ..models.gplvf import GPLVF
from ..models.new_rows_latents import NewRowsLatents
from ..training import NaturalGradientUpdate, adam_by_group, decayed_learning_rate, fit
from ..training.data import steps_per_epoch
from ..validation import check_observations, check_positive_int, check_positive_number
from .gplvf_likelihoods import likelihood_arguments

__all__ = [
    "KERNEL_NAMES",
    "make_kernel",
    "build_encoder",
    "infer_latent",
    "group_adam",
    "train_with_fit",
    "GPLVFTraining",
    "train_gplvf",
    "with_shared_linear_mean",
    "BaseGaussianKLAblation",
    "KL_X_CHOICES",
    "kernel_lengthscales",
    "flow_summaries",
]

KERNEL_NAMES = ("se", "linear", "se+linear")


def make_kernel(name: str, latent_dim: int, num_inducing: int | None = None) -> gpflow.kernels.Kernel:
    """The GP prior's covariance on R^Q by name (one kernel shared by the D outputs):

    * ``"se"``: SE-ARD, variance 1, unit lengthscales (the paper's kernel);
    * ``"linear"``: ARD linear k(x, x') = Σ_q v_q x_q x'_q, v_q = 1/Q (a Bayesian matrix factorisation). Its Kuu
      has rank <= Q, so it needs ``num_inducing <= latent_dim``;
    * ``"se+linear"``: SE-ARD (variance 0.5) + ARD linear (v_q = 0.5/Q).

    Initial prior variances are about 1 at unit-variance latents (the PCA initialisation) in each case.
    """
    latent_dim = check_positive_int(latent_dim, "latent_dim")
    num_inducing = check_positive_int(num_inducing, "num_inducing", allow_none=True)
    if name not in KERNEL_NAMES:
        raise ValueError(f"kernel must be one of {KERNEL_NAMES}, got {name!r}")
    if name == "linear" and num_inducing is not None and num_inducing > latent_dim:
        raise ValueError(
            f"kernel='linear' has a rank-{latent_dim} Kuu: num_inducing={num_inducing} must be <= "
            f"latent_dim={latent_dim} (or use kernel='se+linear')"
        )
    if name == "se":
        return gpflow.kernels.SquaredExponential(lengthscales=np.ones(latent_dim))
    if name == "linear":
        return gpflow.kernels.Linear(variance=np.full(latent_dim, 1.0 / latent_dim))
    return gpflow.kernels.SquaredExponential(variance=0.5, lengthscales=np.ones(latent_dim)) + gpflow.kernels.Linear(
        variance=np.full(latent_dim, 0.5 / latent_dim)
    )


def build_encoder(output_dim: int, latent_dim: int, hidden_units: Sequence[int] = (128, 64)) -> tf_keras.Model:
    """Back-constraint network (Table 1, Lawrence and Quiñonero Candela 2006): a masked row
    [y ⊙ m, m] ∈ R^{2D} -> (μ_n, log s_n) ∈ R^{2Q}. Built, in the default float type."""
    dtype = default_float()
    inputs = tf_keras.Input(shape=(2 * output_dim,), dtype=dtype)
    hidden = inputs
    for width in hidden_units:
        hidden = tf_keras.layers.Dense(width, activation="tanh", dtype=dtype)(hidden)
    outputs = tf_keras.layers.Dense(
        2 * latent_dim,
        dtype=dtype,
        kernel_initializer=tf_keras.initializers.RandomNormal(stddev=1e-2),
        bias_initializer=tf_keras.initializers.Constant(np.r_[np.zeros(latent_dim), np.full(latent_dim, -2.0)]),
    )(hidden)
    return tf_keras.Model(inputs, outputs, name="gplvf_encoder")


# ------------------------------------------------------------------------------------ new rows
def _best_training_latents(model: GPLVF, values: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Initial μ* for new rows: the training-row base mean μ_n whose predicted row (at the flowed g(μ_n), where the
    GP sees it) best fits the observed entries."""
    x = flow_forward_and_log_det(model.flow, tf.convert_to_tensor(model.X_mean))[0]  # [N, Q]
    f_mean = model.predict_f(x)[0].numpy()  # [N, D]
    m = observed.astype(np.float64)
    err = (m * values**2).sum(1)[:, None] - 2 * (m * values) @ f_mean.T + m @ (f_mean**2).T  # [N*, N]
    return model.X_mean.numpy()[np.argmin(err, axis=1)]


def infer_latent(
    model: GPLVF,
    Y_new,
    mask=None,
    *,
    num_steps: int = 300,
    learning_rate: float = 0.05,
    num_samples: int | None = None,
    seed: int = 0,
    decay: str = "constant",
) -> tuple[np.ndarray, np.ndarray]:
    """Non-amortised q(x*) for new rows ``Y_new`` [N*, D] (NaN = missing, or ``mask``): maximise
    Σ_n [E log p(y*_o | x*) - KL(q(x*_n)‖p)] over (μ*_n, s*_n) only, with kernel, Z, q(u), noise and flow fixed.
    Returns (μ* [N*, Q], s* [N*, Q]). With an encoder, starts from its output, else from the best-fitting
    training row's μ_n and s = 0.1.

    ``num_steps`` full-batch Adam steps of ``gpflow_ext.training.fit`` on a
    :class:`~gpflow_ext.models.new_rows_latents.NewRowsLatents` problem, Monte Carlo draws seeded by ``seed``;
    ``decay="cosine"`` decays the rate to 0 over the steps so the result settles instead of ending one noisy step
    away from the optimum.
    """
    values, observed = check_observations(Y_new, mask, name="Y_new", num_outputs=model.output_dim)
    num_steps = check_positive_int(num_steps, "num_steps", minimum=0)
    learning_rate = decayed_learning_rate(learning_rate, decay, int(num_steps))  # checks decay
    num_samples = model.num_samples if num_samples is None else check_positive_int(num_samples, "num_samples")
    if model.encoder is not None:
        init_mean, init_var = model.encode(values, observed)
    else:
        init_mean = _best_training_latents(model, values, observed)
        init_var = np.full_like(init_mean, 0.1)
    init_log_var = np.log(init_var)  # [N*, Q]
    if model.base_covariance.width(model.latent_dim) == 1:  # isotropic: one variance per row
        init_log_var = init_log_var.mean(axis=1, keepdims=True)  # [N*, 1]
    problem = NewRowsLatents(model, values, observed, init_mean, init_log_var, num_samples, seed)
    fit(
        problem,
        None,
        epochs=num_steps,
        optimizer=tf_keras.optimizers.Adam(learning_rate),
        variables=[problem.x_mean, problem.x_log_var],
        progress=False,
        seed=seed,
    )
    return problem.x_mean.numpy(), np.broadcast_to(np.exp(problem.x_log_var.numpy()), init_mean.shape).copy()


# ------------------------------------------------------------------------------------ training
def group_adam(
    model: GPLVF, group_learning_rates: dict[str, float] | None, learning_rate: float, lr_decay: str, total_steps: int
):
    """One Adam per group of ``model.parameter_groups()`` (``gpflow_ext.training.adam_by_group``), each rate
    ``decayed_learning_rate(rate, lr_decay, total_steps)``. ``group_learning_rates``: e.g. ``{"flow": 1e-3,
    "local": 0.05}``; other groups keep ``learning_rate``. A rate for an empty group (a flow rate without a flow)
    is an error."""
    groups = model.parameter_groups()
    rates = dict(group_learning_rates or {})
    for group, rate in rates.items():
        check_positive_number(rate, f"group_learning_rates[{group!r}]")
        if group in groups and not groups[group]:
            raise ValueError(f"a {group} learning rate needs a model with a {group} group (flow length > 0)")

    def decayed(rate):
        return decayed_learning_rate(rate, lr_decay, total_steps, name="lr_decay")

    return adam_by_group(groups, {g: decayed(r) for g, r in rates.items()}, decayed(learning_rate))


def train_with_fit(
    model: GPLVF,
    *,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    seed: int,
    natgrad_gamma: float = 0.0,
    lr_decay: str = "constant",
    group_learning_rates: dict[str, float] | None = None,
    logdir=None,
    progress: bool = False,
):
    """Train ``model`` on its own rows with ``gpflow_ext.training.fit``; returns fit's ``History``.

    Adam per group (:func:`group_adam`) with ``lr_decay`` over all ``epochs x ceil(N / batch_size)`` steps.
    ``natgrad_gamma > 0``: q(u) is updated by GPflow's natural-gradient step of that length on each minibatch
    (Salimbeni et al. 2018), then Adam updates everything else (``NaturalGradientUpdate``)."""
    if not np.isfinite(natgrad_gamma) or not 0.0 <= natgrad_gamma <= 1.0:
        raise ValueError(f"natgrad_gamma must be in [0, 1] (0 = Adam for q(u) too), got {natgrad_gamma!r}")
    total_steps = epochs * steps_per_epoch(model.num_data, batch_size)
    optimizer = group_adam(model, group_learning_rates, learning_rate, lr_decay, total_steps)
    if natgrad_gamma > 0:
        optimizer = NaturalGradientUpdate(natgrad_gamma, optimizer=optimizer)
    return fit(
        model,
        model.training_data(),
        epochs=epochs,
        batch_size=batch_size,
        optimizer=optimizer,
        seed=seed,
        logdir=None if logdir is None else str(logdir),
        progress=progress,
    )


class BaseGaussianKLAblation(LatentKL):
    """KL of the *base* Gaussian N(μ_n, diag s_n), ignoring the flow (biased; an experiment's ablation only).

    Samples still go through the flow, but the flow's volume change (its log-det) costs nothing, so the bound is
    not a lower bound on log p(Y) unless the flow is the identity. Used only to test whether a flow's gains
    depend on it."""

    name = "base_gaussian_ablation"

    def __call__(self, flow, x_mean, x_var, base_noise):
        x, _ = flow_kl_to_standard_normal(flow, x_mean, x_var, base_noise)  # [S, B, Q]
        return x, gaussian_kl_to_standard_normal(x_mean, x_var)  # [B]


#: the experiments' KL(q(x)) choices: name -> (flow -> GPLVF's ``kl_x``). "plain-monte-carlo" is every term by
#: Monte Carlo for a flow (the closed form without one), as in results recorded before 2026-11-25.
KL_X_CHOICES: dict[str, Callable[[Any], LatentKL | None]] = {
    "correct": lambda flow: None,
    "plain-monte-carlo": lambda flow: None if flow is None else MonteCarloFlowKL(base_in_closed_form=False),
    "base-gaussian-ablation": lambda flow: BaseGaussianKLAblation(),
}


@dataclasses.dataclass
class GPLVFTraining:
    """Settings of one GPLVF training run (:func:`train_gplvf`), shared by the MovieLens protocols."""

    latent_dim: int = 10
    num_inducing: int = 20
    epochs: int = 150
    batch_size: int = 64
    learning_rate: float = 0.01
    num_samples: int = 1
    seed: int = 0
    kernel: str = "se"
    natgrad_gamma: float = 0.0
    kl_x: str = "correct"
    base_covariance: str = "diagonal"
    lr_decay: str = "cosine"
    flow_learning_rate: float | None = 1e-3
    local_learning_rate: float | None = None
    identity_at_zero: bool = True
    encoder: bool = False
    likelihood: str = "gaussian"
    shared_linear_mean: bool = False

    def group_rates(self, flow_length: int) -> dict[str, float]:
        """``group_learning_rates`` of a model with ``flow_length`` planar layers."""
        rates = {"local": self.local_learning_rate, "flow": self.flow_learning_rate if flow_length > 0 else None}
        return {group: rate for group, rate in rates.items() if rate is not None}

    def train(self, data, flow_length: int, *, epochs: int | None = None, logdir=None, warm_start=None):
        """:func:`train_gplvf` with these settings (``epochs`` replaces :attr:`epochs`)."""
        settings = dataclasses.asdict(self)
        for key in ("flow_learning_rate", "local_learning_rate", "epochs"):
            settings.pop(key)
        return train_gplvf(
            data,
            flow_length,
            epochs=self.epochs if epochs is None else epochs,
            logdir=logdir,
            group_learning_rates=self.group_rates(flow_length),
            warm_start=warm_start,
            **settings,
        )


def with_shared_linear_mean(mean_function: gpflow.mean_functions.MeanFunction, latent_dim: int):
    """``mean_function`` plus one linear function wᵀx_n shared by every output (w [Q, 1], from zero; no offset of
    its own: the per-output mean holds it). A level of row n that every column sees (a MovieLens user's rating
    level) is then learnt once, through w and x_n, instead of by each output's q(u_d) from its own few entries."""
    check_positive_int(latent_dim, "latent_dim")
    shared = gpflow.mean_functions.Linear(A=np.zeros((latent_dim, 1)), b=np.zeros(1))
    gpflow.utilities.set_trainable(shared.b, False)
    return mean_function + shared


def train_gplvf(
    train,
    flow_length: int,
    *,
    latent_dim: int,
    num_inducing: int,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    num_samples: int,
    seed: int,
    kernel: str = "se",
    natgrad_gamma: float = 0.0,
    logdir=None,
    kl_x: str = "correct",
    base_covariance: str = "diagonal",
    lr_decay: str = "constant",
    group_learning_rates: dict[str, float] | None = None,
    warm_start: GPLVF | None = None,
    identity_at_zero: bool = True,
    encoder: bool = False,
    likelihood: str = "gaussian",
    shared_linear_mean: bool = False,
):
    """Build a GPLVF on ``train`` with ``flow_length`` planar layers (0 = Gaussian q(X)), trainable Z, and train
    it (:func:`train_with_fit`); returns (model, History).

    ``kl_x``: a key of :data:`KL_X_CHOICES`; ``base_covariance``: "diagonal" or "isotropic"; ``kernel``: a name of
    :func:`make_kernel`; ``encoder``: amortise q(x_n) with :func:`build_encoder`; ``likelihood``: a name of
    :data:`~gpflow_ext.recipes.gplvf_likelihoods.LIKELIHOOD_NAMES`. ``warm_start``: a trained
    Gaussian-q(X) GPLVF on the same data whose parameters the new model starts from (its flow starts near the
    identity). ``shared_linear_mean``: the likelihood's per-output mean plus :func:`with_shared_linear_mean`."""
    if kl_x not in KL_X_CHOICES:
        raise ValueError(f"kl_x must be one of {sorted(KL_X_CHOICES)}, got {kl_x!r}")
    if base_covariance not in BASE_COVARIANCE_NAMES:
        raise ValueError(f"base_covariance must be one of {tuple(BASE_COVARIANCE_NAMES)}, got {base_covariance!r}")
    tf.random.set_seed(seed)
    flow = (
        planar_flow(flow_length, latent_dim, seed=seed, identity_at_zero=identity_at_zero) if flow_length > 0 else None
    )
    values, observed = check_observations(train, name="train")
    arguments = likelihood_arguments(likelihood, values, observed)
    if shared_linear_mean:
        _, per_output, _ = likelihood_and_mean_for(
            values, observed, arguments.get("likelihood"), mean_function=arguments.get("mean_function")
        )
        arguments["mean_function"] = with_shared_linear_mean(per_output, latent_dim)
    model = GPLVF(
        train,
        latent_dim,
        num_inducing,
        flow=flow,
        kernel=make_kernel(kernel, latent_dim, num_inducing),
        num_samples=num_samples,
        seed=seed,
        base_covariance=BASE_COVARIANCE_NAMES[base_covariance](),
        encoder=build_encoder(values.shape[1], latent_dim) if encoder else None,
        kl_x=KL_X_CHOICES[kl_x](flow),
        **arguments,
    )
    gpflow.utilities.set_trainable(model.inducing_variable, True)
    if warm_start is not None:
        if encoder:
            raise ValueError("warm_start needs per-row q(x_n) parameters (encoder=False)")
        if warm_start.flow is not None:
            raise ValueError("warm_start must be a Gaussian-q(X) GPLVF (flow=None)")
        warm_values = {k: v.numpy() for k, v in gpflow.utilities.parameter_dict(warm_start).items()}
        gpflow.utilities.multiple_assign(model, warm_values)  # shapes are checked by assign
    history = train_with_fit(
        model,
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
        seed=seed,
        natgrad_gamma=natgrad_gamma,
        lr_decay=lr_decay,
        group_learning_rates=group_learning_rates,
        logdir=logdir,
    )
    return model, history


# ------------------------------------------------------------------------------------ diagnostics
def kernel_lengthscales(kernel: gpflow.kernels.Kernel) -> np.ndarray | None:
    """The SE-ARD lengthscales of ``kernel`` (or of its SE part in a sum); None if it has none."""
    parts = kernel.kernels if isinstance(kernel, gpflow.kernels.Sum) else [kernel]
    for part in parts:
        if isinstance(part, gpflow.kernels.SquaredExponential):
            return part.lengthscales.numpy()
    return None


def flow_summaries(model: GPLVF, heldout_mean, heldout_var, seed: int) -> dict[str, dict[str, float]]:
    """``flow_local_nonlinearity`` of the trained flow over the training rows' q(x_n) and the held-out rows'
    q(x*), in SE lengthscale units: how far each row's flowed q is from a Gaussian."""
    scale = kernel_lengthscales(model.kernel)
    out = {"train": flow_local_nonlinearity(model.flow, *model.training_latents(), scale=scale, seed=seed)}
    if heldout_mean is not None:
        out["heldout"] = flow_local_nonlinearity(model.flow, heldout_mean, heldout_var, scale=scale, seed=seed)
    return out
