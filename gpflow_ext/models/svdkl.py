"""SV-DKL: stochastic variational deep kernel learning (Wilson et al., 2016).

A tf_keras feature extractor ``h(x; w)`` gives Q features; J additive GPs act on subsets of
them (default: one GP per feature), each with an RBF base kernel; a mixing matrix A [C, J] and
a softmax give the class probabilities (eq. 1). With KISS-GP grid inducing points
(``inducing="grid"``, the paper's method) ``f_j = W_j u_j`` exactly (eq. 2 with K̃ = 0), q(u) is
a Kronecker-factored Gaussian (Section 4), and the bound of eq. 4,

    L ≈ N/(T B) Σ_t Σ_i log p(y_i | f_i^(t)) − KL[q(u) ‖ p(u)],

is estimated from minibatches with T reparameterised samples u^(t) = μ + L ε^(t).
With ``inducing="points"`` the GPs use ordinary inducing points on the features and GPflow's
SVGP conditional (f | u has its own variance; KL by ``gauss_kl``), for comparison.

All parameters — network weights, kernel hyperparameters, A, and q(u) — are trained jointly
(``model.training_loss`` with GPflow's external-data convention: ``data = (X, Y)`` with ``Y``
integer class labels ``[N]`` or ``[N, 1]``). :func:`pretrain_and_fit` runs the paper's
Section 5 recipe in one call: network with a softmax head, then the GP layer on the frozen
network's top features (DNN+GP), then everything jointly.
"""
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes

import gpflow
from gpflow.base import InputData, RegressionData
from gpflow.covariances import Kuf, Kuu
from gpflow.inducing_variables import InducingPoints, SharedIndependentInducingVariables
from gpflow.kernels import SeparateIndependent, SquaredExponential
from gpflow.keras import tf_keras
from gpflow.kullback_leiblers import prior_kl
from gpflow.models import BayesianModel, ExternalDataTrainingLossMixin

from ..covariances.grid import (
    circulant_embedding_size,
    circulant_sqrt_apply,
    grid_circulant_spectra,
    grid_kuu_factors,
)
from ..inducing_variables.grid import (
    BoundedScaling,
    GridInducingPoints,
    interpolation_indices_and_weights,
)
from ..likelihoods.mixed_softmax import MixedSoftmax
from ..validation import (
    check_choice,
    check_class_labels,
    check_data_tuple,
    check_network_inputs,
    check_positive_int,
    check_positive_number,
    check_positive_values,
    check_training_data,
)
from ..variational.kronecker import KroneckerGaussian, kron_apply

__all__ = ["SVDKL", "SoftmaxNetwork", "pretrain_and_fit", "classification_metrics", "validate_classification_data"]


def validate_classification_data(
    X: Any, Y: Any, num_classes: int, input_shape: Optional[Tuple[int, ...]] = None, name: str = "data"
) -> Tuple[np.ndarray, np.ndarray]:
    """Check ``(X, Y)`` at the API boundary: X non-empty, finite, rows of ``input_shape``; Y integer-valued
    class indices in [0, C) with one per row of X (``[N]`` or ``[N, 1]``). Returns (X unchanged, Y int64 [N]).

    The rules are :func:`gpflow_ext.validation.check_network_inputs` and
    :func:`~gpflow_ext.validation.check_class_labels`; ``name`` prefixes the arrays (``data[1] (Y)``).
    """
    X = check_network_inputs(X, f"{name}[0] (X)", input_shape)
    Y = check_class_labels(Y, num_classes, name=f"{name}[1] (Y)", num_rows=X.shape[0])
    return X, Y


def _layer_input_shape(layer: tf_keras.layers.Layer) -> Optional[Tuple[int, ...]]:
    """The shape of one input row of a built tf_keras layer/model, ``None`` when it is not known."""
    try:
        return tuple(int(s) for s in layer.input_shape[1:])
    except (AttributeError, RuntimeError, TypeError, ValueError):
        return None


def check_network_dtype(model: Any) -> None:
    """Raise when the model's ``tf_keras`` layers (``feature_extractor``, ``head``) hold floating weights of another
    type than ``gpflow.default_float()``: tf_keras layers default to float32, GPflow to float64, and the mix cannot
    train. The message names the layers' ``dtype=`` argument, the fix in the network's own code."""
    expected = tf.as_dtype(gpflow.default_float())
    layers = [getattr(model, name, None) for name in ("feature_extractor", "head")]
    wrong = [v for layer in layers if layer is not None for v in layer.weights
             if v.dtype.is_floating and v.dtype.base_dtype != expected]
    if not wrong:
        return
    found = sorted({v.dtype.base_dtype.name for v in wrong})
    names = ", ".join(v.name for v in wrong[:3]) + (", ..." if len(wrong) > 3 else "")
    raise ValueError(
        f"{type(model).__name__}'s tf_keras layers hold {'/'.join(found)} weights ({names}) but the model computes in "
        f"{expected.name} (gpflow.default_float()); tf_keras layers default to float32: pass dtype=\"{expected.name}\" "
        f"to every layer and to tf_keras.Input, e.g. tf_keras.layers.Dense(50, dtype=gpflow.default_float()), "
        "or build the whole model in float32 under gpflow.config.as_context(gpflow.config.Config(float=np.float32))"
    )


def _check_classifier_data(model: Any, data: Any, num_classes: Optional[int]) -> Tuple[np.ndarray, np.ndarray]:
    """``(X, Y)`` for a classifier on a network: X rows of the network's input shape (integer X cast to
    float64), Y integer class indices in [0, C) returned as int64 ``[N, 1]``; the network's layers must compute
    in ``gpflow.default_float()`` (:func:`check_network_dtype`)."""
    check_network_dtype(model)
    X, Y = check_data_tuple(data, ("X", "Y"), type(model).__name__)
    X = check_network_inputs(X, "data[0] (X)", model.input_shape, integer="cast")
    Y = check_class_labels(Y, num_classes, name="data[1] (Y)", num_rows=X.shape[0])
    return X, Y[:, None]


class SVDKL(BayesianModel, ExternalDataTrainingLossMixin):
    """Stochastic variational deep kernel learning for classification (Sections 3–4).

    :param feature_extractor: a built ``tf_keras`` model/layer mapping inputs to Q features.
    :param num_classes: C.
    :param num_data: N, the training-set size (scales the minibatch likelihood, eq. 4).
    :param feature_groups: J lists of feature indices, all of the same length D (the base
        kernels' input dimension); default ``[[0], [1], ..., [Q-1]]`` (one GP per feature).
    :param num_features: Q, needed only if it cannot be read from ``feature_extractor.output_shape``.
    :param inducing: ``"grid"`` (KISS-GP + Kronecker q(u), the paper) or ``"points"`` (SVGP-style).
    :param grid_size: grid points per dimension (``"grid"``).
    :param num_inducing: inducing points per GP (``"points"``; default ``grid_size``).
    :param num_samples: T, Monte Carlo samples of u per step (eq. 4; the paper uses 1).
    :param lengthscale: initial RBF lengthscale (features are scaled into [-1, 1]).
    :param jitter: added to each Kronecker factor of K_ZZ.
    :param whiten: parameterise q(u) through u = R v with K_ZZ = R Rᵀ (R = ⊗_d chol(K_d)) and
        q(v) = N(μ, ⊗_d L_d L_dᵀ). This is the same Kronecker family as the paper's q(u)
        (u's factors are R_d L_d) with the same KL, but far better conditioned for gradient
        descent on fine grids. ``False`` gives the paper's direct N(μ, LLᵀ) parameterisation.
    :param grid_prior: ``"toeplitz"`` (default): the exact K_ZZ of the base kernel, whitened by the
        Cholesky factors of its Toeplitz/Kronecker factors (O(m_d³) per step, for the sampler and,
        unwhitened, the KL). ``"circulant"`` (the paper's circulant approximation of Toeplitz K_ZZ,
        no Cholesky): each grid axis is embedded in a ring of n_d ≈ ``circulant_period_factor``·(m_d − 1)
        points and the base kernel periodised with that period, whose circulant covariance C_d has
        the closed-form spectrum of :func:`~gpflow_ext.covariances.grid.grid_circulant_spectra`;
        u = (⊗_d R_d) v with R_d the first m_d rows of C_d^{1/2}F_dᵀ (F_d the ring's orthonormal real
        Fourier basis), applied by inverse FFT in O(n log n); p(v) = N(0, I). q(v) is the Kronecker
        Gaussian over the ``circulant_variational_size`` lowest-frequency coordinates of each axis
        (default m_d, as many free numbers as the paper's full L), the higher frequencies staying
        at their prior — their spectral weight is below the grid's resolution (relative
        exp(−2π²ℓ²/(6h)²) for spacing h with the default factor 3). The prior is the periodised
        kernel, exactly ``R Rᵀ`` = :func:`~gpflow_ext.covariances.grid.periodised_grid_kuu`, which
        differs from the squared exponential by about k(P − span) (1.2e-8 for ℓ = 0.7 on [-1, 1] with
        the default factor 3; 0.12 for ℓ = 2). Needs ``whiten=True``.
    :param circulant_period_factor: the ring's period in units of the grid's span (>= 2).
    :param circulant_variational_size: free Fourier coordinates per axis (default: the grid size).
    :param out_of_range: the grid's policy for features outside [-1, 1] ("clamp" or "error");
        the built-in tanh scaling keeps features inside.
    """

    def __init__(
        self,
        feature_extractor: tf_keras.layers.Layer,
        num_classes: int,
        num_data: int,
        *,
        feature_groups: Optional[Sequence[Sequence[int]]] = None,
        num_features: Optional[int] = None,
        inducing: str = "grid",
        grid_size: int = 64,
        num_inducing: Optional[int] = None,
        num_samples: int = 1,
        lengthscale: float = 0.5,
        jitter: float = 1e-5,
        whiten: bool = True,
        grid_prior: str = "toeplitz",
        circulant_period_factor: float = 3.0,
        circulant_variational_size: Optional[int] = None,
        out_of_range: str = "clamp",
        name: Optional[str] = None,
    ):
        super().__init__(name=name)
        if not isinstance(feature_extractor, tf_keras.layers.Layer):
            raise TypeError(
                "feature_extractor must be a tf_keras model or layer "
                f"(from gpflow.keras import tf_keras), got {type(feature_extractor).__name__}"
            )
        num_classes = check_positive_int(num_classes, "num_classes", minimum=2)
        num_data = check_positive_int(num_data, "num_data")
        num_samples = check_positive_int(num_samples, "num_samples")
        grid_size = check_positive_int(grid_size, "grid_size")
        num_features = check_positive_int(num_features, "num_features", allow_none=True)
        num_inducing = check_positive_int(num_inducing, "num_inducing", allow_none=True)
        circulant_variational_size = check_positive_int(
            circulant_variational_size, "circulant_variational_size", allow_none=True
        )
        check_positive_values(lengthscale, "lengthscale")
        check_positive_number(jitter, "jitter", "a positive finite number")
        check_choice(inducing, "inducing", ("grid", "points"))
        check_choice(grid_prior, "grid_prior", ("toeplitz", "circulant"))
        if grid_prior == "circulant" and (inducing != "grid" or not whiten):
            raise ValueError("grid_prior='circulant' needs inducing='grid' and whiten=True")
        if num_features is None:
            try:
                num_features = int(feature_extractor.output_shape[-1])
            except (AttributeError, RuntimeError, TypeError, ValueError) as err:
                raise ValueError(
                    "cannot read the number of features from feature_extractor.output_shape; "
                    "build the model (give it an Input) or pass num_features"
                ) from err
        Q = int(num_features)
        if feature_groups is None:
            feature_groups = [[q] for q in range(Q)]
        groups = [list(map(int, g)) for g in feature_groups]
        if len(groups) == 0 or any(len(g) == 0 for g in groups):
            raise ValueError("feature_groups must be a non-empty list of non-empty index lists")
        D = len(groups[0])
        if any(len(g) != D for g in groups):
            raise ValueError(f"all feature_groups must have the same size, got {[len(g) for g in groups]}")
        if min(min(g) for g in groups) < 0 or max(max(g) for g in groups) >= Q:
            raise ValueError(f"feature_groups index features out of range [0, {Q})")

        self.feature_extractor = feature_extractor
        self.input_shape = _layer_input_shape(feature_extractor)
        self.num_classes = int(num_classes)
        self.num_data = int(num_data)
        self.num_features = Q
        self.feature_groups = np.asarray(groups, dtype=np.int32)  # [J, D]
        self.num_gps = J = len(groups)
        self.input_dim = D
        self.num_samples = int(num_samples)
        self.inducing = inducing
        self.jitter = float(jitter)
        self.whiten = bool(whiten)
        self.scaling = BoundedScaling(-1.0, 1.0, name="feature_scaling")
        self.scaling.build((None, Q))
        self.likelihood = MixedSoftmax(self.num_classes, J)

        if inducing == "grid":
            self.kernel = SeparateIndependent(
                [SquaredExponential(lengthscales=[lengthscale] * D) for _ in range(J)]
            )
            self.inducing_variable = GridInducingPoints(
                grid_size, input_dim=D, lower=-1.0, upper=1.0, out_of_range=out_of_range
            )
            self.grid_prior = grid_prior
            if grid_prior == "circulant":
                self.ring_sizes = tuple(
                    circulant_embedding_size(m_d, circulant_period_factor)
                    for m_d in self.inducing_variable.grid_sizes
                )
                self.variational_sizes = tuple(
                    min(n_d, int(circulant_variational_size or m_d))
                    for n_d, m_d in zip(self.ring_sizes, self.inducing_variable.grid_sizes)
                )
                if min(self.variational_sizes) < 1:
                    raise ValueError(f"circulant_variational_size must be >= 1, got {circulant_variational_size}")
                self.q = KroneckerGaussian(J, self.variational_sizes)  # q(v), low frequencies
            else:
                self.q = KroneckerGaussian(J, self.inducing_variable.grid_sizes)
            self.q.init_from_prior(None if self.whiten else self.prior_factors())
        else:
            self.grid_prior = None
            M = int(num_inducing or grid_size)
            self.kernel = SeparateIndependent(
                [SquaredExponential(lengthscales=[lengthscale] * D, active_dims=g) for g in groups]
            )
            Z = np.tile(np.linspace(-1.0, 1.0, M)[:, None], [1, Q])  # [M, Q]
            rng = np.random.default_rng(0)
            for q in range(1, Q):  # decorrelate dimensions of a multi-D group
                Z[:, q] = rng.permutation(Z[:, q])
            self.inducing_variable = SharedIndependentInducingVariables(InducingPoints(Z))
            Kmm = Kuu(self.inducing_variable, self.kernel, jitter=self.jitter)  # [J, M, M]
            self.q_mu = gpflow.Parameter(np.zeros((M, J)), name="q_mu")  # [M, J]
            q_sqrt = np.tile(np.eye(M)[None], [J, 1, 1]) if self.whiten else tf.linalg.cholesky(Kmm)
            self.q_sqrt = gpflow.Parameter(
                q_sqrt, transform=gpflow.utilities.triangular(), name="q_sqrt"
            )  # [J, M, M]

    # -- pieces ----------------------------------------------------------------------------
    def network_variables(self) -> List[tf.Variable]:
        return list(self.feature_extractor.trainable_variables)

    def gp_variables(self) -> List[tf.Variable]:
        net = {id(v) for v in self.network_variables()}
        return [v for v in self.trainable_variables if id(v) not in net]

    def raw_features(self, X: InputData, training: bool = False) -> tf.Tensor:
        """The network's top-level features h(x; w), ``[N, Q]``."""
        H = self.feature_extractor(X, training=training)
        return tf.cast(H, gpflow.default_float())

    def features(self, X: InputData, training: bool = False) -> tf.Tensor:
        """Features mapped into the grid range [-1, 1] by the bounded scaling, ``[N, Q]``."""
        return self.scaling(self.raw_features(X, training=training))

    def prior_factors(self) -> List[tf.Tensor]:
        """K_ZZ Kronecker factors of the J GPs, jitter included: D × ``[J, m_d, m_d]``."""
        return self._stack_gps(
            [grid_kuu_factors(self.inducing_variable, k, self.jitter) for k in self.kernel.kernels]
        )

    def _stack_gps(self, per_gp: List[List[tf.Tensor]]) -> List[tf.Tensor]:
        """J lists of D per-dimension tensors -> D tensors batched over the J GPs."""
        return [tf.stack([f[d] for f in per_gp]) for d in range(self.input_dim)]

    def prior_sqrt_factors(self) -> List[Any]:
        """The whitening maps R_d of each grid axis (u = (⊗_d R_d) v), as functions
        ``[J, n_d, r] -> [J, m_d, r]``: Cholesky factors (``"toeplitz"``) or FFT square roots of
        the circulant embeddings (``"circulant"``)."""
        if self.grid_prior == "circulant":
            spectra = self._stack_gps(
                [
                    grid_circulant_spectra(self.inducing_variable, k, self.ring_sizes, self.jitter)
                    for k in self.kernel.kernels
                ]
            )  # D × [J, n_d//2+1]
            sizes = self.inducing_variable.grid_sizes
            return [lambda v, lam=lam, m=m: circulant_sqrt_apply(lam, v, m) for lam, m in zip(spectra, sizes)]
        chols = [tf.linalg.cholesky(K) for K in self.prior_factors()]
        return [lambda v, R=R: tf.linalg.matmul(R, v) for R in chols]

    def prior_kl(self) -> tf.Tensor:
        if self.inducing == "grid":
            return self.q.kl(None if self.whiten else self.prior_factors())
        return prior_kl(
            self.inducing_variable, self.kernel, self.q_mu, self.q_sqrt, whiten=self.whiten
        )

    def sample_inducing(self, num_samples: int, seed: Optional[tf.Tensor] = None) -> tf.Tensor:
        """Reparameterised grid values u^(t) = μ + L ε^(t) (whitened: u = R(μ + L ε)), ``[J, m, T]``.

        ``seed``: None (TF's global generator) or a shape-[2] integer tensor for stateless draws."""
        seeds = (None, None) if seed is None else tuple(tf.unstack(tf.random.experimental.stateless_split(seed, 2)))
        v = self.q.sample(num_samples, seed=seeds[0])  # [J, m, T] (circulant: [J, ∏ k_d, T] low frequencies)
        if self.grid_prior == "circulant":
            v = self._fill_rings(v, num_samples, seed=seeds[1])  # [J, ∏ n_d, T]
        return self.grid_values(v) if self.whiten else v

    @check_shapes("v: [J, N, R]", "return: [J, M, R]")
    def grid_values(self, v: tf.Tensor) -> tf.Tensor:
        """The whitening map u = (⊗_d R_d) v, R_d R_dᵀ = K_d: ``[J, ∏ n_d, R] -> [J, m, R]``
        (n_d = m_d for ``"toeplitz"``; the ring sizes for ``"circulant"``)."""
        sizes = self.ring_sizes if self.grid_prior == "circulant" else self.inducing_variable.grid_sizes
        return kron_apply(sizes, v, self.prior_sqrt_factors())

    def _fill_rings(self, v_low: tf.Tensor, num_samples: int, seed: Optional[tf.Tensor] = None) -> tf.Tensor:
        """Place q(v)'s low-frequency block in the rings' Fourier coordinates; the remaining
        coordinates are drawn from their prior N(0, 1)."""
        J = self.num_gps
        if self.variational_sizes == self.ring_sizes:
            return v_low
        low = tf.reshape(v_low, [J, *self.variational_sizes, num_samples])  # [J, k_1..k_D, T]
        pads = [[0, 0]] + [[0, n - k] for n, k in zip(self.ring_sizes, self.variational_sizes)] + [[0, 0]]
        mask = tf.pad(tf.ones_like(low), pads)  # [J, n_1..n_D, T]
        if seed is None:
            eps = tf.random.normal(tf.shape(mask), dtype=v_low.dtype)
        else:
            eps = tf.random.stateless_normal(tf.shape(mask), seed=seed, dtype=v_low.dtype)
        v = tf.pad(low, pads) + (1.0 - mask) * eps
        return tf.reshape(v, [J, -1, num_samples])  # [J, ∏ n_d, T]

    @check_shapes("H: [B, Q]", "return: [T, B, J]")
    def latent_samples(self, H: tf.Tensor, num_samples: int, seed: Optional[tf.Tensor] = None) -> tf.Tensor:
        """Samples of the J GP outputs at scaled features H: f^(t) = W u^(t) (eq. 8).

        ``seed``: None (TF's global generator) or a shape-[2] integer tensor: stateless draws, so the same
        seed gives the same samples eagerly, in a ``tf.function`` and in an exported SavedModel."""
        if self.inducing == "grid":
            Hg = tf.gather(H, self.feature_groups, axis=1)  # [B, J, D]
            indices, weights = interpolation_indices_and_weights(self.inducing_variable, Hg)  # [B, J, K]
            u = self.sample_inducing(num_samples, seed=seed)  # [J, m, T]
            idx = tf.transpose(indices, [1, 0, 2])  # [J, B, K]
            gathered = tf.gather(u, idx, axis=1, batch_dims=1)  # [J, B, K, T]
            w = tf.transpose(weights, [1, 0, 2])[..., None]  # [J, B, K, 1]
            f = tf.reduce_sum(w * gathered, axis=2)  # [J, B, T]
            return tf.transpose(f, [2, 1, 0])  # [T, B, J]
        mean, var = self.points_conditional(H)  # [B, J], [B, J]
        eps_shape = tf.concat([[num_samples], tf.shape(mean)], 0)
        if seed is None:
            eps = tf.random.normal(eps_shape, dtype=mean.dtype)
        else:
            eps = tf.random.stateless_normal(eps_shape, seed=seed, dtype=mean.dtype)
        return mean[None] + tf.sqrt(var)[None] * eps  # [T, B, J]

    @check_shapes("H: [B, Q]", "return[0]: [B, J]", "return[1]: [B, J]")
    def points_conditional(self, H: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        """SVGP marginals q(f_j(h)) for the ``"points"`` option, batched over the J GPs."""
        Kmm = Kuu(self.inducing_variable, self.kernel, jitter=self.jitter)  # [J, M, M]
        Kmn = Kuf(self.inducing_variable, self.kernel, H)  # [J, M, B]
        Knn = self.kernel(H, full_cov=False, full_output_cov=False)  # [B, J]
        Lm = tf.linalg.cholesky(Kmm)  # [J, M, M]
        A = tf.linalg.triangular_solve(Lm, Kmn, lower=True)  # [J, M, B]
        if not self.whiten:
            A = tf.linalg.triangular_solve(Lm, A, lower=True, adjoint=True)  # K_mm⁻¹ K_mn
            var = Knn - tf.transpose(tf.reduce_sum(Kmn * A, axis=1))  # [B, J]
        else:
            var = Knn - tf.transpose(tf.reduce_sum(tf.square(A), axis=1))  # [B, J]
        mean = tf.transpose(tf.reduce_sum(A * tf.transpose(self.q_mu)[:, :, None], axis=1))  # [B, J]
        LtA = tf.linalg.matmul(self.q_sqrt, A, transpose_a=True)  # [J, M, B]
        var = var + tf.transpose(tf.reduce_sum(tf.square(LtA), axis=1))  # [B, J]
        return mean, var

    # -- the bound (eq. 4) ---------------------------------------------------------------------
    def expected_log_likelihood(self, data: RegressionData, num_samples: Optional[int] = None):
        """(1/T) Σ_t Σ_i log p(y_i | f_i^(t)) over the minibatch (a scalar)."""
        X, Y = data
        T = num_samples or self.num_samples
        H = self.features(X, training=True)  # [B, Q]
        F = self.latent_samples(H, T)  # [T, B, J]
        Y = tf.reshape(tf.cast(Y, F.dtype), [-1, 1])  # [B, 1]
        log_p = self.likelihood.log_prob(H, F, Y[None])  # [T, B]
        return tf.reduce_sum(log_p) / tf.cast(T, F.dtype)

    def elbo(self, data: RegressionData, num_samples: Optional[int] = None) -> tf.Tensor:
        """Eq. 4: N/(T B) Σ_t Σ_i log p(y_i | f_i^(t)) − KL[q(u) ‖ p(u)]."""
        X, _ = data
        batch = tf.cast(tf.shape(X)[0], gpflow.default_float())
        scale = tf.cast(self.num_data, gpflow.default_float()) / batch
        return scale * self.expected_log_likelihood(data, num_samples) - self.prior_kl()

    def maximum_log_likelihood_objective(self, data: RegressionData) -> tf.Tensor:
        return self.elbo(data)

    # -- prediction ----------------------------------------------------------------------------
    def predict_proba_batch(self, X: InputData, num_samples: int = 16, seed: Optional[tf.Tensor] = None) -> tf.Tensor:
        """Monte Carlo class probabilities E_q[softmax(A f)] for one batch, ``[B, C]`` (``seed``: see
        :meth:`latent_samples`)."""
        H = self.features(X, training=False)
        F = self.latent_samples(H, num_samples, seed=seed)  # [T, B, J]
        return tf.reduce_mean(tf.nn.softmax(self.likelihood.logits(F)), axis=0)

    def predict_proba(
        self, X: Any, num_samples: int = 16, batch_size: int = 2048, seed: Optional[int] = None
    ) -> np.ndarray:
        """Class probabilities ``[N, C]`` by Monte Carlo over q(u) (checked input, batched).

        ``seed``: None draws fresh samples on every call; an integer makes the draws reproducible
        (stateless; with grid inducing points every batch uses the same draws of u, so the result
        does not depend on ``batch_size``, and it equals ``gpflow_ext.serving`` exports made with that seed)."""
        num_samples = check_positive_int(num_samples, "num_samples")
        batch_size = check_positive_int(batch_size, "batch_size")
        seed_tensor = None if seed is None else _stateless_seed(seed)
        X = check_network_inputs(X, "X", self.input_shape)
        dtype = self.q.q_mu.dtype if self.inducing == "grid" else self.q_mu.dtype
        out = [
            self._predict_proba_compiled(
                tf.constant(X[i : i + batch_size], dtype=dtype), tf.constant(int(num_samples)), seed_tensor
            ).numpy()
            for i in range(0, X.shape[0], batch_size)
        ]
        return np.concatenate(out, axis=0)

    @tf.function(reduce_retracing=True)
    def _predict_proba_compiled(self, X: tf.Tensor, T: tf.Tensor, seed: Optional[tf.Tensor]) -> tf.Tensor:
        # a compiled method, not a tf.function stored on the instance, so the model still deep-copies
        return self.predict_proba_batch(X, T, seed=seed)

    def evaluate(
        self, X: Any, Y: Any, num_samples: int = 16, batch_size: int = 2048, seed: Optional[int] = None
    ) -> Dict[str, float]:
        """Accuracy and mean negative log predictive probability (NLP, Tables 5–6); ``seed`` as in
        :meth:`predict_proba`."""
        X, Y = validate_classification_data(X, Y, self.num_classes, self.input_shape)
        P = self.predict_proba(X, num_samples=num_samples, batch_size=batch_size, seed=seed)
        return classification_metrics(P, Y)

    def deep_kernel(self, X1: Any, X2: Any = None) -> np.ndarray:
        """The learned deep kernel Σ_j k_j(h_j(x), h_j(x')) on scaled features (Figure 3).

        The base kernels' own k; with ``grid_prior="circulant"`` the model's prior is k periodised
        with the ring's period, which equals k on [-1, 1] up to about k(P − span)."""
        H1 = self.features(tf.constant(np.asarray(X1)))
        H2 = H1 if X2 is None else self.features(tf.constant(np.asarray(X2)))
        K = 0.0
        for j, k in enumerate(self.kernel.kernels):
            g = self.feature_groups[j]
            if self.inducing == "points":  # kernels carry active_dims
                K += k.K(H1, H2)
            else:
                K += k.K(tf.gather(H1, g, axis=1), tf.gather(H2, g, axis=1))
        return K.numpy()


def _stateless_seed(seed: Any) -> tf.Tensor:
    """An integer seed as the shape-[2] int64 tensor of TF's stateless random ops."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
    return tf.constant([0, int(seed)], dtype=tf.int64)


def classification_metrics(P: np.ndarray, Y: np.ndarray) -> Dict[str, float]:
    """Accuracy and mean negative log probability of the true class."""
    P = np.asarray(P, dtype=np.float64)
    Y = np.asarray(Y).reshape(-1).astype(np.int64)
    p_true = np.clip(P[np.arange(len(Y)), Y], 1e-300, 1.0)
    return {"accuracy": float(np.mean(P.argmax(axis=1) == Y)), "nlp": float(-np.mean(np.log(p_true)))}


# -- training ------------------------------------------------------------------------------------
class SoftmaxNetwork(BayesianModel, ExternalDataTrainingLossMixin):
    """The stand-alone DNN of Section 5: feature extractor (+ optional linear head) and softmax.

    Its objective is the mean log-softmax probability of the labels over a minibatch, so that
    ``gpflow_ext.training.fit`` trains it like any GPflow model.
    """

    def __init__(self, feature_extractor: tf_keras.layers.Layer, head: Optional[tf_keras.layers.Layer] = None):
        super().__init__()
        if not isinstance(feature_extractor, tf_keras.layers.Layer):
            raise TypeError(
                "feature_extractor must be a tf_keras model or layer "
                f"(from gpflow.keras import tf_keras), got {type(feature_extractor).__name__}"
            )
        if head is not None and not isinstance(head, tf_keras.layers.Layer):
            raise TypeError(f"head must be a tf_keras layer or None, got {type(head).__name__}")
        self.feature_extractor = feature_extractor
        self.head = head

    @property
    def input_shape(self) -> Optional[Tuple[int, ...]]:
        """The shape of one input row the feature extractor expects (``None`` when it is not known)."""
        return _layer_input_shape(self.feature_extractor)

    @property
    def num_classes(self) -> Optional[int]:
        """C: the head's units, else the feature extractor's outputs (``None`` when not known)."""
        if self.head is not None:
            units = getattr(self.head, "units", None)
            return int(units) if units is not None else None
        try:
            return int(self.feature_extractor.output_shape[-1])
        except (AttributeError, RuntimeError, TypeError, ValueError):
            return None

    def logits(self, X: InputData, training: bool = False) -> tf.Tensor:
        H = self.feature_extractor(X, training=training)
        out = H if self.head is None else self.head(H)
        return tf.cast(out, gpflow.default_float())  # [B, C]

    def maximum_log_likelihood_objective(self, data: RegressionData) -> tf.Tensor:
        X, Y = data
        labels = tf.reshape(tf.cast(Y, tf.int32), [-1])
        logits = self.logits(X, training=True)
        return -tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))

    @tf.function(reduce_retracing=True)
    def _predict_fn(self, x: tf.Tensor) -> tf.Tensor:
        # a compiled method: TF keeps its per-instance traces outside the instance, so the model still deep-copies
        return tf.nn.softmax(self.logits(x))  # [B, C]

    def predict_proba(self, X: np.ndarray, batch_size: int = 2048) -> np.ndarray:
        """Softmax class probabilities ``[N, C]``, in batches through one compiled function (traced once per
        model, not once per call)."""
        X = check_network_inputs(X, "X", self.input_shape)
        batch_size = check_positive_int(batch_size, "batch_size")
        return np.concatenate(
            [self._predict_fn(tf.constant(X[i : i + batch_size])).numpy() for i in range(0, len(X), batch_size)]
        )


def pretrain_and_fit(
    model: SVDKL,
    data: Tuple[np.ndarray, np.ndarray],
    *,
    network_epochs: int = 10,
    gp_epochs: int = 5,
    joint_epochs: int = 10,
    batch_size: int = 256,
    joint_batch_size: Optional[int] = None,
    network_learning_rate: float = 1e-3,
    gp_learning_rate: float = 1e-2,
    joint_learning_rate: float = 1e-3,
    joint_gp_learning_rate: Optional[float] = None,
    network_optimizer: Optional[Any] = None,
    validation_data: Optional[Tuple[np.ndarray, np.ndarray]] = None,
    num_predict_samples: int = 16,
    seed: int = 0,
    logdir: Optional[str] = None,
    progress: bool = False,
    fit_kwargs: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """Section 5 in one call: DNN with softmax head → GP layer on its frozen features → joint.

    1. The feature extractor is trained with the softmax loss (directly on its Q outputs when
       Q = C, as in the paper; otherwise through a linear head) — the **DNN** baseline.
    2. The bounded scaling is adapted to the features (skipped by a call with only joint epochs,
       which continues from the current model), and the GP layer (q(u), kernels, A) is fit
       with the network frozen — the **DNN+GP** baseline.
    3. All parameters, network weights included, are trained jointly through the bound of
       eq. 4 — **SV-DKL**.

    Every stage runs through ``gpflow_ext.training.fit`` (TensorBoard under
    ``logdir/{network,gp,joint}``; ``fit_kwargs`` go to the joint stage, e.g. ``metrics``).
    With ``validation_data`` each stage's accuracy and NLP are returned under ``"dnn"``,
    ``"dnn_gp"``, ``"svdkl"``; the fit histories under ``"*_history"``.

    ``joint_batch_size``: minibatch size of stage 3 (default ``batch_size``; the paper trains SV-DKL with
    larger minibatches than the network, e.g. 5 000 on MNIST, Section 5.2).
    ``network_optimizer``: a tf_keras optimizer for stage 1 only (e.g. SGD with momentum and weight
    decay as in Caffe's LeNet solver); default ``Adam(network_learning_rate)``. Stages 2 and 3 use
    Adam with ``gp_learning_rate`` / ``joint_learning_rate``.
    ``joint_gp_learning_rate``: if given, stage 3 keeps two Adam optimizers
    (:class:`gpflow_ext.training.GroupedOptimizer`): ``joint_learning_rate`` for the network
    weights and ``joint_gp_learning_rate`` for the GP layer (q(u), kernels, A, scaling), so the
    variational parameters keep moving at a GP-sized rate while the network is fine-tuned.
    """
    from ..training import GroupedOptimizer, TensorBoard, fit  # local import: training imports models lazily too

    X, Y = validate_classification_data(*data, model.num_classes, model.input_shape, name="data")
    num_predict_samples = check_positive_int(num_predict_samples, "num_predict_samples")  # before any training
    if validation_data is not None:
        Xv, Yv = validate_classification_data(
            *validation_data, model.num_classes, model.input_shape, name="validation_data"
        )
    network_epochs = check_positive_int(network_epochs, "network_epochs", minimum=0)
    gp_epochs = check_positive_int(gp_epochs, "gp_epochs", minimum=0)
    joint_epochs = check_positive_int(joint_epochs, "joint_epochs", minimum=0)
    joint_batch_size = batch_size if joint_batch_size is None else joint_batch_size
    if joint_gp_learning_rate is not None:  # fit gets a ready optimizer then, so both rates are checked here
        check_positive_number(joint_gp_learning_rate, "joint_gp_learning_rate", "a positive number or None")
        check_positive_number(joint_learning_rate, "joint_learning_rate")
        if "optimizer" in (fit_kwargs or {}):
            raise ValueError("pass either joint_gp_learning_rate or fit_kwargs['optimizer'], not both")
    for name, value in (("batch_size", batch_size), ("joint_batch_size", joint_batch_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    batch_size = int(min(batch_size, len(X)))
    joint_batch_size = int(min(joint_batch_size, len(X)))
    train_data = (X, Y[:, None])
    common = dict(batch_size=batch_size, seed=seed, progress=progress, exact_random_resume=False)

    def stage_logdir(stage):
        return None if logdir is None else str(Path(logdir) / stage)

    out: Dict[str, Any] = {}

    # 1. network + softmax head (the DNN baseline)
    head = None
    if model.num_features != model.num_classes:
        head = tf_keras.layers.Dense(model.num_classes, dtype=gpflow.default_float(), name="softmax_head")
        head.build((None, model.num_features))
    network = SoftmaxNetwork(model.feature_extractor, head)
    if network_epochs > 0:
        out["network_history"] = fit(
            network, train_data, epochs=network_epochs, learning_rate=network_learning_rate,
            optimizer=network_optimizer, logdir=stage_logdir("network"),
            callbacks=[TensorBoard(log_parameters=False)], **common,
        )
    if validation_data is not None:
        out["dnn"] = classification_metrics(network.predict_proba(Xv), Yv)

    # 2. GP layer on the frozen network's features (DNN+GP)
    # The scaling is fitted to the features whenever stage 1 or 2 runs; a joint-only call
    # (network_epochs = gp_epochs = 0) continues training from the current, learnt scaling.
    if network_epochs > 0 or gp_epochs > 0:
        sample = X[np.random.default_rng(seed).permutation(len(X))[:10_000]]
        H = np.concatenate(
            [model.raw_features(tf.constant(sample[i : i + 2048])).numpy() for i in range(0, len(sample), 2048)]
        )
        model.scaling.adapt(H)
    if gp_epochs > 0:
        out["gp_history"] = fit(
            model, train_data, epochs=gp_epochs, learning_rate=gp_learning_rate,
            variables=model.gp_variables(), logdir=stage_logdir("gp"),
            callbacks=[TensorBoard(log_parameters=False)], **common,
        )
    if validation_data is not None:
        out["dnn_gp"] = model.evaluate(Xv, Yv, num_samples=num_predict_samples)

    # 3. everything jointly (SV-DKL)
    if joint_epochs > 0:
        kwargs = dict(common, batch_size=joint_batch_size)
        kwargs.update(fit_kwargs or {})
        kwargs["callbacks"] = list(kwargs.get("callbacks", ())) + [TensorBoard(log_parameters=False)]
        if joint_gp_learning_rate is not None:
            kwargs["optimizer"] = GroupedOptimizer([
                (tf_keras.optimizers.Adam(joint_learning_rate), model.network_variables()),
                (tf_keras.optimizers.Adam(joint_gp_learning_rate), model.gp_variables()),
            ])
        out["joint_history"] = fit(
            model, train_data, epochs=joint_epochs, learning_rate=joint_learning_rate,
            logdir=stage_logdir("joint"), **kwargs,
        )
    if validation_data is not None:
        out["svdkl"] = model.evaluate(Xv, Yv, num_samples=num_predict_samples)
    return out


@check_training_data.register(SVDKL)
def _check_svdkl_data(model: SVDKL, data: Any) -> Tuple[Any, ...]:
    """``(X, Y)`` for :class:`SVDKL`: X rows of the feature extractor's input shape, Y class indices in
    [0, num_classes) (1.5, -1 and >= C refused, naming the first bad row), returned as int64 ``[N, 1]``."""
    return _check_classifier_data(model, data, model.num_classes)


@check_training_data.register(SoftmaxNetwork)
def _check_softmax_network_data(model: SoftmaxNetwork, data: Any) -> Tuple[Any, ...]:
    """``(X, Y)`` for :class:`SoftmaxNetwork`: as for SVDKL, with C the head's (or the network's) outputs."""
    return _check_classifier_data(model, data, model.num_classes)
