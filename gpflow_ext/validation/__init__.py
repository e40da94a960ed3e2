"""One set of argument and data checks for gpflow_ext, run at the API boundary before any tf.function.

Every problem raises a plain Python error (``TypeError`` for a wrong kind of value, ``ValueError``
for a wrong value) whose message names the argument and says what was expected, so that a user
never has to read a TensorFlow traceback from inside a traced graph.

* Arguments: :func:`check_positive_int`, :func:`check_positive_number`, :func:`check_positive_values`,
  :func:`check_choice`, :func:`check_model`.
* Arrays: :func:`check_data` (a tuple of arrays with equal first dimension), :func:`check_input_matrix`
  (inputs ``X [N, D]``), :func:`check_class_labels` (class indices), :func:`check_multilabel_labels`
  (0/1 label matrices), :func:`check_observations` (values with missing entries and masks),
  :func:`check_row_index` (row indices of local parameters), :func:`check_latents` (base Gaussians (μ, s)),
  :func:`check_rows_with_missing_data` (GPLVF's (values, mask, row index)); for classifiers on a tf_keras
  network :func:`validate_classification_data`, :func:`check_network_dtype`, :func:`check_classifier_data`.
* The data-check hook :func:`check_training_data` (``functools.singledispatch``): what a training loop
  calls on ``(model, data)`` before anything is traced. It returns the data as a tuple of numpy /
  ``scipy.sparse`` arrays, normalised the way the model's ``training_loss`` expects, or raises naming
  the offending array (``data[1] (Y)``). The default is :func:`check_data`; GPflow's ``SVGP`` is
  registered here, gpflow_ext's models register next to their classes. Whether an SVGP's inputs may be
  sparse is asked of its inducing variable through :func:`accepts_sparse_inputs`, where inducing
  variables register.

This module sits below every other gpflow_ext module: it imports only numpy, scipy, TensorFlow and
GPflow, and nothing from the rest of gpflow_ext (which registers its rules here instead).
"""

from .arguments import (
    check_choice,
    check_float_tuple,
    check_model,
    check_positive_int,
    check_positive_number,
    check_positive_values,
)
from .arrays import (
    check_data,
    check_data_tuple,
    check_input_matrix,
    check_network_inputs,
    check_same_num_rows,
)
from .classifiers import check_classifier_data, check_network_dtype, layer_input_shape, validate_classification_data
from .hook import accepts_sparse_inputs, check_regression_data, check_training_data, inducing_input_dim
from .labels import (
    check_class_labels,
    check_multilabel_data,
    check_multilabel_labels,
    check_observations,
    check_row_index,
    labels_to_csr,
)
from .latents import check_equal_variances, check_latents, check_rows_with_missing_data

__all__ = [
    "check_float_tuple",
    "check_data",
    "check_positive_int",
    "check_positive_number",
    "check_positive_values",
    "check_choice",
    "check_model",
    "check_input_matrix",
    "check_network_inputs",
    "check_class_labels",
    "check_multilabel_labels",
    "check_multilabel_data",
    "labels_to_csr",
    "check_observations",
    "check_row_index",
    "check_data_tuple",
    "check_same_num_rows",
    "check_regression_data",
    "inducing_input_dim",
    "check_training_data",
    "accepts_sparse_inputs",
    "validate_classification_data",
    "check_network_dtype",
    "check_classifier_data",
    "layer_input_shape",
    "check_latents",
    "check_equal_variances",
    "check_rows_with_missing_data",
]
