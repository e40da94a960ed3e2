"""SV-DKL: stochastic variational deep kernel learning (Wilson et al., 2016).

A tf_keras feature extractor ``h(x; w)`` gives Q features; J additive GPs act on subsets of them (default:
one GP per feature), each with an RBF base kernel; a mixing matrix A [C, J] and a softmax give the class
probabilities (eq. 1). An optional GPflow mean function of the features gives the class scores a prior mean,
``A f(h) + m(h)`` (default zero, the paper's model; a :class:`gpflow.mean_functions.Linear` map lets the layer start
exactly at a network's own head, :func:`gpflow_ext.recipes.svdkl.match_network`). The GPs, their inducing variables and q(u) are one object
(:mod:`gpflow_ext.variational.latent_gps`): with a :class:`~gpflow_ext.variational.KISSGPGrid` (the paper's
method) ``f_j = W_j u_j`` exactly (eq. 2 with K̃ = 0), q(u) is Kronecker-factored (Section 4) and the grid
prior an object (Toeplitz or circulant); the bound of eq. 4,

    L ≈ N/(T B) Σ_t Σ_i log p(y_i | f_i^(t)) − KL[q(u) ‖ p(u)],

is estimated from minibatches with T reparameterised samples u^(t) = μ + L ε^(t). With
:class:`~gpflow_ext.variational.FreeInducingPoints` the GPs use ordinary inducing points on the features and
GPflow's SVGP conditional and KL, for comparison.

All parameters — network weights, kernel hyperparameters, A, and q(u) — are trained jointly
(``model.training_loss`` with GPflow's external-data convention: ``data = (X, Y)`` with ``Y`` integer class
labels ``[N]`` or ``[N, 1]``). The paper's Section 5 schedule (network, then GP layer, then jointly) is
:func:`gpflow_ext.recipes.svdkl.pretrain_and_fit`.
"""

from collections.abc import Sequence
from typing import Any

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.base import InputData, RegressionData
from gpflow.keras import tf_keras
from gpflow.models import BayesianModel, ExternalDataTrainingLossMixin

from ..inducing_variables.grid import BoundedScaling
from ..likelihoods.mixed_softmax import MixedSoftmax, softmax_log_prob
from ..metrics import classification_metrics
from ..randomness import announced_noise
from ..validation import (
    check_classifier_data,
    check_network_inputs,
    check_positive_int,
    check_positive_number,
    check_positive_values,
    check_training_data,
    validate_classification_data,
)
from ..validation.classifiers import layer_input_shape
from ..variational.latent_gps import KISSGPGrid, LatentGPs
from .svdkl_arguments import class_score_mean, feature_groups_array, latent_gps_of, num_features_of

__all__ = ["SVDKL"]


class SVDKL(BayesianModel, ExternalDataTrainingLossMixin):
    """Stochastic variational deep kernel learning for classification (Sections 3–4).

    :param feature_extractor: a built ``tf_keras`` model/layer mapping inputs to Q features.
    :param num_classes: C.
    :param num_data: N, the training-set size (scales the minibatch likelihood, eq. 4).
    :param feature_groups: J lists of feature indices, all of the same length D (the base kernels' input
        dimension); default ``[[0], [1], ..., [Q-1]]`` (one GP per feature).
    :param num_features: Q, needed only if it cannot be read from ``feature_extractor.output_shape``.
    :param inducing: the GPs' inducing choice, an unbuilt :class:`~gpflow_ext.variational.KISSGPGrid`
        (default ``KISSGPGrid(64)``, the paper's grid; its ``prior`` is
        :class:`~gpflow_ext.variational.ToeplitzGridPrior`, exact K_ZZ, or
        :class:`~gpflow_ext.variational.CirculantGridPrior`, the paper's circulant approximation, FFT, which
        needs ``whiten=True``) or :class:`~gpflow_ext.variational.FreeInducingPoints` (SVGP-style).
    :param num_samples: T, Monte Carlo samples of u per step (eq. 4; the paper uses 1).
    :param lengthscale: initial RBF lengthscale (features are scaled into [-1, 1]).
    :param jitter: added to K_ZZ (each Kronecker factor on a grid).
    :param whiten: parameterise q(u) through u = R v with K_ZZ = R Rᵀ and q(v) = N(μ, ⊗_d L_d L_dᵀ): the same
        family and KL as the paper's q(u), far better conditioned for gradient descent on fine grids.
        ``False`` gives the paper's direct N(μ, LLᵀ) parameterisation (Toeplitz prior and inducing points).
    :param mean_function: a GPflow mean function m of the network's raw features h ``[B, Q]`` giving ``[B, C]``,
        added to the mixed GPs' class scores: ``logits = A f(h) + m(h)`` (default ``Zero``: the paper's model).
        With ``gpflow.mean_functions.Linear(A=[Q, C], b=[C])``, :func:`~gpflow_ext.recipes.svdkl.match_network`
        sets m to the network's own head and q(u) to a shrunk prior of zero mean, so the layer's mean class scores
        start exactly at the network's and the GPs learn what the linear head misses.
    """

    def __init__(
        self,
        feature_extractor: tf_keras.layers.Layer,
        num_classes: int,
        num_data: int,
        *,
        feature_groups: Sequence[Sequence[int]] | None = None,
        num_features: int | None = None,
        inducing: LatentGPs | None = None,
        num_samples: int = 1,
        lengthscale: float = 0.5,
        jitter: float = 1e-5,
        whiten: bool = True,
        mean_function: gpflow.mean_functions.MeanFunction | None = None,
        name: str | None = None,
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
        num_features = check_positive_int(num_features, "num_features", allow_none=True)
        check_positive_values(lengthscale, "lengthscale")
        check_positive_number(jitter, "jitter", "a positive finite number")
        gps = latent_gps_of(inducing)
        if isinstance(gps, KISSGPGrid) and not gps.prior.supports_unwhitened and not whiten:
            raise ValueError(f"{gps.prior!r} needs whiten=True")
        Q = num_features_of(feature_extractor, num_features)
        groups = feature_groups_array(feature_groups, Q)
        mean_function = class_score_mean(mean_function, Q, int(num_classes))

        self.feature_extractor = feature_extractor
        self.input_shape = layer_input_shape(feature_extractor)
        self.num_classes = int(num_classes)
        self.num_data = int(num_data)
        self.num_features = Q
        self.feature_groups = groups  # [J, D]
        self.num_gps, self.input_dim = (int(s) for s in groups.shape)
        self.num_samples = int(num_samples)
        self.jitter = float(jitter)
        self.whiten = bool(whiten)
        self.scaling = BoundedScaling(-1.0, 1.0, name="feature_scaling")
        self.scaling.build((None, Q))
        self.likelihood = MixedSoftmax(self.num_classes, self.num_gps)
        self.mean_function = mean_function
        gps.build(groups, Q, lengthscale, self.jitter, self.whiten)
        self.gps = gps

    # -- the GP layer's parts, under GPflow's names --------------------------------------------
    @property
    def kernel(self) -> gpflow.kernels.Kernel:
        """The J base kernels (a ``SeparateIndependent``)."""
        return self.gps.kernel

    @property
    def inducing_variable(self) -> Any:
        """The GPs' inducing variable (a grid, or shared inducing points)."""
        return self.gps.inducing_variable

    @property
    def q(self) -> Any:
        """q(u) of a grid: the :class:`~gpflow_ext.variational.KroneckerGaussian`."""
        return self.gps.q

    @property
    def q_mu(self) -> gpflow.Parameter:
        """q(u)'s mean (``[M, J]`` for inducing points; ``[J, m]`` for a grid)."""
        return self.gps.q_mu if hasattr(self.gps, "q_mu") else self.gps.q.q_mu

    # -- pieces ----------------------------------------------------------------------------
    def network_variables(self) -> list[tf.Variable]:
        return list(self.feature_extractor.trainable_variables)

    def gp_variables(self) -> list[tf.Variable]:
        net = {id(v) for v in self.network_variables()}
        return [v for v in self.trainable_variables if id(v) not in net]

    @check_shapes("X: [B, input_shape...]", "return: [B, Q]")
    def raw_features(self, X: InputData, training: bool = False) -> tf.Tensor:
        """The network's top-level features h(x; w), ``[N, Q]``."""
        H = self.feature_extractor(X, training=training)
        return tf.cast(H, gpflow.default_float())

    @check_shapes("X: [B, input_shape...]", "return: [B, Q]")
    def features(self, X: InputData, training: bool = False) -> tf.Tensor:
        """Features mapped into the grid range [-1, 1] by the bounded scaling, ``[N, Q]``."""
        return self.scaling(self.raw_features(X, training=training))

    def prior_kl(self) -> tf.Tensor:
        """KL[q(u) ‖ p(u)] of the J GPs (eq. 4)."""
        return self.gps.prior_kl()

    @check_shapes("return: [J, M, T]")
    def sample_inducing(self, num_samples: int, seed: tf.Tensor | None = None) -> tf.Tensor:
        """Reparameterised grid values u^(t), ``[J, m, T]`` (grid inducing only; ``seed`` as in
        :meth:`latent_samples`)."""
        return self.gps.sample_inducing(num_samples, seed=seed)

    @check_shapes("H: [B, Q]", "return: [T, B, J]")
    def latent_samples(self, H: tf.Tensor, num_samples: int, seed: tf.Tensor | None = None) -> tf.Tensor:
        """Samples of the J GP outputs at scaled features H: f^(t) = W u^(t) on a grid (eq. 8).

        ``seed``: None (TF's global generator) or a shape-[2] integer tensor: stateless draws, so the same
        seed gives the same samples eagerly, in a ``tf.function`` and in an exported SavedModel."""
        return self.gps.latent_samples(H, num_samples, seed=seed)

    # -- the bound (eq. 4) ---------------------------------------------------------------------
    def expected_log_likelihood(self, data: RegressionData, num_samples: int | None = None) -> tf.Tensor:
        """(1/T) Σ_t Σ_i log p(y_i | f_i^(t)) over the minibatch (a scalar)."""
        X, Y = data
        T = num_samples or self.num_samples
        raw = self.raw_features(X, training=True)  # [B, Q]
        H = self.scaling(raw)  # [B, Q]
        announced = announced_noise()  # under fit: draws keyed by (fit seed, step, row), XLA or not
        F = self.latent_samples(H, T) if announced is None else self.gps.latent_samples(H, T, *announced)  # [T, B, J]
        scores = self.likelihood.logits(F) + self.mean_function(raw)[None]  # [T, B, C]
        log_p = softmax_log_prob(scores, tf.reshape(Y, [-1]))  # [T, B]
        return tf.reduce_sum(log_p) / tf.cast(T, F.dtype)

    def elbo(self, data: RegressionData, num_samples: int | None = None) -> tf.Tensor:
        """Eq. 4: N/(T B) Σ_t Σ_i log p(y_i | f_i^(t)) − KL[q(u) ‖ p(u)]."""
        X, _ = data
        batch = tf.cast(tf.shape(X)[0], gpflow.default_float())
        scale = tf.cast(self.num_data, gpflow.default_float()) / batch
        return scale * self.expected_log_likelihood(data, num_samples) - self.prior_kl()

    def maximum_log_likelihood_objective(self, data: RegressionData) -> tf.Tensor:
        return self.elbo(data)

    # -- prediction ----------------------------------------------------------------------------
    @check_shapes("X: [B, input_shape...]", "return: [B, C]")
    def predict_proba_batch(self, X: InputData, num_samples: int = 16, seed: tf.Tensor | None = None) -> tf.Tensor:
        """Monte Carlo class probabilities E_q[softmax(A f)] for one batch, ``[B, C]`` (``seed``: see
        :meth:`latent_samples`)."""
        raw = self.raw_features(X, training=False)  # [B, Q]
        F = self.latent_samples(self.scaling(raw), num_samples, seed=seed)  # [T, B, J]
        scores = self.likelihood.logits(F) + self.mean_function(raw)[None]  # [T, B, C]
        return tf.reduce_mean(tf.nn.softmax(scores), axis=0)

    def predict_proba(
        self, X: Any, num_samples: int = 16, batch_size: int = 2048, seed: int | None = None
    ) -> np.ndarray:
        """Class probabilities ``[N, C]`` by Monte Carlo over q(u) (checked input, batched).

        ``seed``: None draws fresh samples on every call; an integer makes the draws reproducible
        (stateless; with grid inducing points every batch uses the same draws of u, so the result
        does not depend on ``batch_size``, and it equals ``gpflow_ext.serving`` exports made with that seed)."""
        num_samples = check_positive_int(num_samples, "num_samples")
        batch_size = check_positive_int(batch_size, "batch_size")
        seed_tensor = None if seed is None else _stateless_seed(seed)
        X = check_network_inputs(X, "X", self.input_shape)
        dtype = self.gps.dtype
        out = [
            self._predict_proba_compiled(
                tf.constant(X[i : i + batch_size], dtype=dtype), tf.constant(int(num_samples)), seed_tensor
            ).numpy()
            for i in range(0, X.shape[0], batch_size)
        ]
        return np.concatenate(out, axis=0)

    @tf.function(reduce_retracing=True)
    def _predict_proba_compiled(self, X: tf.Tensor, T: tf.Tensor, seed: tf.Tensor | None) -> tf.Tensor:
        # a compiled method, not a tf.function stored on the instance, so the model still deep-copies
        return self.predict_proba_batch(X, T, seed=seed)

    def evaluate(
        self, X: Any, Y: Any, num_samples: int = 16, batch_size: int = 2048, seed: int | None = None
    ) -> dict[str, float]:
        """Accuracy and mean negative log predictive probability (NLP, Tables 5–6); ``seed`` as in
        :meth:`predict_proba`."""
        X, Y = validate_classification_data(X, Y, self.num_classes, self.input_shape)
        P = self.predict_proba(X, num_samples=num_samples, batch_size=batch_size, seed=seed)
        return classification_metrics(P, Y)

    def deep_kernel(self, X1: Any, X2: Any = None) -> np.ndarray:
        """The learned deep kernel Σ_j k_j(h_j(x), h_j(x')) on scaled features (Figure 3).

        The base kernels' own k; with a circulant grid prior the model's prior is k periodised with the
        ring's period, which equals k on [-1, 1] up to about k(P − span)."""
        H1 = self.features(tf.constant(np.asarray(X1)))
        H2 = H1 if X2 is None else self.features(tf.constant(np.asarray(X2)))
        return self.gps.kernel_matrix(H1, H2).numpy()


def _stateless_seed(seed: Any) -> tf.Tensor:
    """An integer seed as the shape-[2] int64 tensor of TF's stateless random ops."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
    return tf.constant([0, int(seed)], dtype=tf.int64)


@check_training_data.register(SVDKL)
def _check_svdkl_data(model: SVDKL, data: Any) -> tuple[Any, ...]:
    """``(X, Y)`` for :class:`SVDKL`: X rows of the feature extractor's input shape, Y class indices in
    [0, num_classes) (1.5, -1 and >= C refused, naming the first bad row), returned as int64 ``[N, 1]``."""
    return check_classifier_data(model, data, model.num_classes)
