"""q(x*) of new rows under a fixed GPLVF, as a GPflow model that ``gpflow_ext.training.fit`` can train."""

import tensorflow as tf
from gpflow.config import default_float
from gpflow.models.model import BayesianModel
from gpflow.models.training_mixins import InternalDataTrainingLossMixin

from ..latents import draw_base_noise


class NewRowsLatents(BayesianModel, InternalDataTrainingLossMixin):
    """q(x*) = base N(μ*_n, s*_n) (then the flow) of new rows under a fixed GPLVF, as a GPflow model.

    Its variables are ``x_mean`` [N*, Q] and ``x_log_var`` [N*, Q] (isotropic base: [N*, 1]); its objective
    is Σ_n [E_q log p(y*_o,n | x*_n) - KL(q(x*_n) ‖ p(x*_n))] of the observed entries, with the GPLVF's
    kernel, Z, q(u), noise and flow held fixed. Monte Carlo base noise [S, N*, Q] comes from its own
    ``tf.random.Generator`` seeded with ``seed``, one draw per evaluation. ``gpflow_ext.recipes.gplvf.infer_latent``
    trains it with ``gpflow_ext.training.fit``. The GPLVF is referred to, not tracked: its variables are
    not this model's (``trainable_variables`` holds x_mean and x_log_var only).
    """

    _TF_MODULE_IGNORED_PROPERTIES = BayesianModel._TF_MODULE_IGNORED_PROPERTIES | {"gplvf"}

    def __init__(self, gplvf, values, observed, init_mean, init_log_var, num_samples: int, seed: int):
        super().__init__()
        self.gplvf = gplvf
        self.num_samples = int(num_samples)
        self.x_mean = tf.Variable(init_mean, dtype=default_float(), name="x_mean")  # [N*, Q]
        self.x_log_var = tf.Variable(init_log_var, dtype=default_float(), name="x_log_var")  # [N*, Q or 1]
        self.values = tf.constant(values)  # [N*, D]
        self.mask = tf.constant(observed)  # [N*, D] bool
        self.noise_generator = tf.random.Generator.from_seed(seed)

    def maximum_log_likelihood_objective(self) -> tf.Tensor:
        gplvf = self.gplvf
        noise = draw_base_noise(self.noise_generator, self.num_samples, self.values.shape[0], gplvf.latent_dim)
        x_var = tf.broadcast_to(tf.exp(self.x_log_var), tf.shape(self.x_mean))  # [N*, Q]
        expected_log_lik, kl_x = gplvf.row_terms(self.values, self.mask, self.x_mean, x_var, noise)
        return tf.reduce_sum(expected_log_lik - kl_x)
