"""SV-DKL's Section 5 schedule: the network (DNN), the GP layer on its frozen features (DNN+GP), then jointly.

Two things make the schedule safe to use at any budget:

* **The GP layer starts where the network ends** (:func:`match_network`): with a linear class-score mean
  (``SVDKL(mean_function=gpflow.mean_functions.Linear(...))``, as :func:`~gpflow_ext.recipes.svdkl.run_three_way`
  builds it) the mean is the network's own head and the GPs a zero residual with a shrunk prior, so DNN+GP's mean
  class scores are the network's exactly; with the paper's zero mean, each grid GP's q(u) is the GP-regression
  posterior of its own network feature (so ``f_j(h) ≈ h_j``; see :mod:`gpflow_ext.variational.from_targets`) and
  the mixing matrix is the network's last linear map, so DNN+GP predicts nearly what the network predicts.
* **Every stage is chosen on validation data** (:class:`~gpflow_ext.training.EarlyStopping`), a stratified
  split of the training rows (``validation_fraction``) or the caller's ``validation_data``. An epoch is a
  candidate when its validation accuracy is at least the stage's starting accuracy and its validation NLP is
  below the start's by more than ``gain_standard_errors`` standard errors of the per-row paired difference
  (a gain the validation rows cannot tell from noise leaves the start in place); the stage keeps the candidate
  with the lowest validation NLP, or its starting state if there is none. A stage never returns a model worse
  on validation, in accuracy or NLP, than the one it started from; the test split, if given, is only scored.
"""

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from ..metrics import classification_metrics, true_class_nlp
from ..models import SVDKL, SoftmaxNetwork
from ..training import EarlyStopping, GroupedOptimizer, Metrics, TensorBoard, fit
from ..validation import check_positive_int, check_positive_number, validate_classification_data
from ..variational.from_targets import (
    check_shrink_scale,
    match_kernel_variances,
    set_posterior_of_targets,
    set_shrunk_prior,
)

__all__ = ["SVDKLSchedule", "run_schedule", "pretrain_and_fit", "match_network", "stratified_split"]


@dataclasses.dataclass
class SVDKLSchedule:
    """The pretrain → GP → joint schedule (Section 5).

    ``joint_batch_size``: minibatch size of stage 3 (default ``batch_size``; the paper trains SV-DKL with
    larger minibatches than the network, e.g. 5 000 on MNIST, Section 5.2). ``joint_gp_learning_rate``: if
    given, stage 3 keeps two Adam optimizers (:class:`gpflow_ext.training.GroupedOptimizer`):
    ``joint_learning_rate`` for the network weights and ``joint_gp_learning_rate`` for the GP layer.
    ``validation_fraction``: the share of the training rows held out (stratified) to choose each stage's
    epoch when no ``validation_data`` is given; 0 trains on every row and keeps each stage's last epoch.
    ``patience``: validation evaluations without improvement before a stage stops (``None``: every stage runs
    all its epochs, and the best one on validation is kept). ``gain_standard_errors``: a stage leaves its
    starting state only for a validation NLP lower by more than this many standard errors of the mean per-row
    difference against the start (0: any lower NLP).
    """

    network_epochs: int = 10
    gp_epochs: int = 5
    joint_epochs: int = 10
    batch_size: int = 256
    joint_batch_size: int | None = None
    network_learning_rate: float = 1e-3
    gp_learning_rate: float = 1e-2
    joint_learning_rate: float = 1e-3
    joint_gp_learning_rate: float | None = None
    num_predict_samples: int = 16
    validation_fraction: float = 0.1
    patience: int | None = None
    gain_standard_errors: float = 2.0
    seed: int = 0


def stratified_split(X: np.ndarray, Y: np.ndarray, fraction: float, seed: int) -> tuple[tuple, tuple]:
    """``(train, validation)`` with ``fraction`` of the rows held out, stratified by class where every class has
    at least two rows (else a plain random split)."""
    from sklearn.model_selection import train_test_split

    counts = np.bincount(Y)
    stratify = Y if counts[counts > 0].min() >= 2 and round(fraction * len(Y)) >= (counts > 0).sum() else None
    X_train, X_valid, Y_train, Y_valid = train_test_split(
        X, Y, test_size=fraction, random_state=seed, stratify=stratify
    )
    return (X_train, Y_train), (X_valid, Y_valid)


def _batched(function: Callable[[tf.Tensor], tf.Tensor], X: np.ndarray, batch: int = 2048) -> np.ndarray:
    return np.concatenate([function(tf.constant(X[i : i + batch])).numpy() for i in range(0, len(X), batch)])


def match_network(
    model: SVDKL,
    network: SoftmaxNetwork,
    X: np.ndarray,
    *,
    num_rows: int = 10_000,
    noise_fraction: float = 1e-6,
    saturation: float = 2.0,
    residual_scale: float = 1e-4,
    seed: int = 0,
) -> dict[str, float]:
    """Start the GP layer where the network ends: DNN+GP then predicts (nearly) what ``network`` predicts.

    On up to ``num_rows`` training rows: the bounded scaling is fitted to the network's features h (no feature
    beyond ``tanh(saturation)``, so the identity map of a heavy-tailed feature stays smooth on the grid), then, with one
    GP per feature (the default groups), the mixing matrix A is the network's last linear map (the identity when
    its features are the class scores; the head's weights, its bias moved into the GP targets, otherwise) and
    each GP's q(u) the regression posterior of its own feature (:func:`set_posterior_of_targets`). With other
    feature groups, A is kept and the GPs' targets are ``pinv(A)`` times the network's class scores.
    When the model's mean function is a ``gpflow.mean_functions.Linear`` (``SVDKL(mean_function=...)``), it is set
    to the network's head (the identity when the features are the class scores) and the GPs start as a zero
    residual, q(u) = N(0, ``residual_scale``² K_uu) (:func:`set_shrunk_prior`; kernel variances the targets'): the
    layer's mean class scores are then the network's exactly, and its samples differ from them by
    ``residual_scale`` times the prior's standard deviation. Returns the root mean square error of the GP layer's
    mean class scores against the network's.
    """
    head = network.head
    linear_mean = isinstance(model.mean_function, gpflow.mean_functions.Linear)
    check_shrink_scale(residual_scale, "residual_scale")  # before the model is changed
    if linear_mean and not (head is None or isinstance(head, tf_keras.layers.Dense)):
        raise TypeError(
            "network.head must be a tf_keras Dense layer or None to set the model's Linear mean_function to it, "
            f"got {type(head).__name__}"
        )
    rows = np.random.default_rng(seed).permutation(len(X))[: min(num_rows, len(X))]
    sample = X[rows]
    raw = _batched(model.raw_features, sample)  # [B, Q]
    model.scaling.adapt(raw, saturation=saturation)
    H = model.scaling(tf.constant(raw))  # [B, Q]
    logits = _batched(network.logits, sample)  # [B, C]
    one_per_feature = (
        model.num_gps == model.num_features
        and np.array_equal(model.feature_groups[:, 0], np.arange(model.num_features))
        and model.input_dim == 1
    )
    if one_per_feature and head is None:
        mixing, targets = np.eye(model.num_classes, model.num_gps), raw
    elif one_per_feature and isinstance(head, tf_keras.layers.Dense):
        weights, bias = _head_map(head, model.num_features, model.num_classes)
        mixing = weights.T  # [C, Q]
        targets = raw + np.linalg.lstsq(mixing, bias, rcond=None)[0][None]  # [B, Q]: A (h + c) = W^T h + b
    else:
        mixing = model.likelihood.mixing.numpy()
        targets = logits @ np.linalg.pinv(mixing).T  # [B, J]
    model.likelihood.mixing.assign(mixing)
    if linear_mean:  # the head itself is the mean, W^T h + b, and the GPs a zero residual at the targets' scale
        weights, bias = _head_map(head, model.num_features, model.num_classes)
        model.mean_function.A.assign(weights)
        model.mean_function.b.assign(bias)
        match_kernel_variances(model.gps, targets)
        set_shrunk_prior(model.gps, residual_scale)
        fitted = np.zeros_like(targets)  # [B, J]
    else:
        fitted = set_posterior_of_targets(model.gps, H, targets, noise_fraction=noise_fraction)  # [B, J]
    scores = fitted @ mixing.T + model.mean_function(tf.constant(raw)).numpy()  # [B, C]
    return {"logit_rmse": float(np.sqrt(np.mean((scores - logits) ** 2)))}


def _head_map(head: Any, Q: int, C: int) -> tuple[np.ndarray, np.ndarray]:
    """The network's last linear map as ``(W [Q, C], b [C])``: the identity when its features are the scores."""
    if head is None:
        return np.eye(Q, C), np.zeros(C)
    weights = head.kernel.numpy().astype(np.float64)  # [Q, C]
    bias = head.bias.numpy().astype(np.float64) if head.use_bias else np.zeros(C)
    return weights, bias


class _Validation:
    """Accuracy and NLP of a model on validation rows, computed once per training step count (cached), so the
    stopping rule and the logged metrics share one evaluation."""

    def __init__(
        self,
        data: tuple[np.ndarray, np.ndarray],
        predict_proba: Callable[[np.ndarray], np.ndarray],
        gain_standard_errors: float,
    ):
        self.X, self.Y = data[0], np.asarray(data[1]).reshape(-1).astype(np.int64)
        self.predict_proba, self.gain_standard_errors = predict_proba, gain_standard_errors
        self.key: Any = None
        self.values: dict[str, float] = {}
        self.row_nlp = np.zeros(0)  # [N] the last evaluation's -log p(y_n)
        self.start: tuple[float, np.ndarray] | None = None  # the stage's starting accuracy and row NLPs

    def __call__(self, model: Any, step: int) -> dict[str, float]:
        if self.key != (id(model), step):
            P = np.asarray(self.predict_proba(self.X), dtype=np.float64)  # [N, C]
            self.row_nlp = true_class_nlp(P, self.Y)  # [N]
            accuracy = float(np.mean(P.argmax(axis=1) == self.Y))
            self.key, self.values = (id(model), step), {"accuracy": accuracy, "nlp": float(np.mean(self.row_nlp))}
        return self.values

    def score(self, model: Any, step: int) -> float:
        """The validation NLP of a candidate (see the module's docstring), else ``inf``; the first call scores
        the stage's start, which is always a candidate."""
        values = self(model, step)
        if self.start is None:
            self.start = (values["accuracy"], self.row_nlp)
            return values["nlp"]
        start_accuracy, start_nlp = self.start
        difference = self.row_nlp - start_nlp  # [N] paired per-row change against the start
        error = difference.std(ddof=1) / np.sqrt(len(difference)) if len(difference) > 1 else 0.0
        gain_is_clear = difference.mean() < -self.gain_standard_errors * error
        accurate = values["accuracy"] >= start_accuracy
        return values["nlp"] if accurate and gain_is_clear else float("inf")

    def stopping(self, patience: int, name: str) -> tuple[EarlyStopping, dict[str, Callable]]:
        """The stage's EarlyStopping on :meth:`score`, and the validation NLP and accuracy as metrics."""
        stop = EarlyStopping(self.score, name=f"{name}_score", patience=patience)
        return stop, {
            f"{name}_nlp": lambda model, step: self(model, step)["nlp"],
            f"{name}_accuracy": lambda model, step: self(model, step)["accuracy"],
        }


def run_schedule(
    model: SVDKL,
    data: tuple[np.ndarray, np.ndarray],
    schedule: SVDKLSchedule,
    *,
    network_optimizer: Any | None = None,
    validation_data: tuple[np.ndarray, np.ndarray] | None = None,
    test_data: tuple[np.ndarray, np.ndarray] | None = None,
    logdir: str | None = None,
    progress: bool = False,
    fit_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Section 5 in one call: DNN with softmax head → GP layer on its frozen features → joint.

    1. The feature extractor is trained with the softmax loss (directly on its Q outputs when Q = C, as in
       the paper; otherwise through a linear head) — the **DNN** baseline.
    2. The GP layer is started where the network ends (:func:`match_network`; skipped by a call with only joint
       epochs, which continues from the current model) and fit with the network frozen — **DNN+GP**.
    3. All parameters, network weights included, are trained jointly through the bound of eq. 4 — **SV-DKL**.

    Validation rows are ``validation_data`` or a stratified ``schedule.validation_fraction`` of ``data``; each
    stage keeps its starting state unless an epoch is at least as accurate on validation and clearly lower in
    validation NLP (``schedule.gain_standard_errors``), and then the lowest-NLP such epoch; each stage logs
    ``val_accuracy``/``val_nlp`` to TensorBoard (``logdir/{network,gp,joint}``) every epoch.
    Returns ``"dnn"``, ``"dnn_gp"``, ``"svdkl"``: accuracy and NLP of each stage's model on ``test_data`` (on the
    validation rows without it); ``"validation"``: the same on the validation rows; ``"chosen_epoch"``: each
    stage's kept epoch (0 = its starting state); the fit histories under ``"*_history"``. ``fit_kwargs`` go to
    the joint stage (e.g. ``callbacks``); ``network_optimizer``: a tf_keras optimizer for stage 1 only.
    """
    s = schedule
    X, Y = validate_classification_data(*data, model.num_classes, model.input_shape, name="data")
    num_predict_samples = check_positive_int(s.num_predict_samples, "num_predict_samples")  # before any training
    checked = {}
    for name, given in (("validation_data", validation_data), ("test_data", test_data)):
        if given is not None:
            checked[name] = validate_classification_data(*given, model.num_classes, model.input_shape, name=name)
    network_epochs = check_positive_int(s.network_epochs, "network_epochs", minimum=0)
    gp_epochs = check_positive_int(s.gp_epochs, "gp_epochs", minimum=0)
    joint_epochs = check_positive_int(s.joint_epochs, "joint_epochs", minimum=0)
    patience = check_positive_int(s.patience, "patience", allow_none=True)
    gain_standard_errors = check_positive_number(
        s.gain_standard_errors, "gain_standard_errors", "a finite number >= 0", allow_zero=True
    )
    if not (isinstance(s.validation_fraction, (int, float)) and 0.0 <= s.validation_fraction < 1.0):
        raise ValueError(f"validation_fraction must be in [0, 1), got {s.validation_fraction!r}")
    batch_size = s.batch_size
    joint_batch_size = batch_size if s.joint_batch_size is None else s.joint_batch_size
    if s.joint_gp_learning_rate is not None:  # fit gets a ready optimizer then, so both rates are checked here
        check_positive_number(s.joint_gp_learning_rate, "joint_gp_learning_rate", "a positive number or None")
        check_positive_number(s.joint_learning_rate, "joint_learning_rate")
        if "optimizer" in (fit_kwargs or {}):
            raise ValueError("pass either joint_gp_learning_rate or fit_kwargs['optimizer'], not both")
    for name, value in (("batch_size", batch_size), ("joint_batch_size", joint_batch_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    valid = checked.get("validation_data")
    if valid is None and s.validation_fraction > 0:
        rows = len(X)
        (X, Y), valid = stratified_split(X, Y, s.validation_fraction, s.seed)
        if model.num_data == rows:  # N of the bound (eq. 4) is the number of rows trained on
            model.num_data = len(X)
    test = checked.get("test_data", valid)
    batch_size, joint_batch_size = int(min(batch_size, len(X))), int(min(joint_batch_size, len(X)))
    train_data = (X, Y[:, None])
    common: dict[str, Any] = dict(batch_size=batch_size, seed=s.seed, progress=progress, exact_random_resume=False)
    out: dict[str, Any] = {"validation": {}, "chosen_epoch": {}}

    def stage_logdir(stage: str) -> str | None:
        return None if logdir is None else str(Path(logdir) / stage)

    def predict_model(Xe: np.ndarray) -> np.ndarray:
        return model.predict_proba(Xe, num_samples=num_predict_samples, seed=s.seed)

    def evaluate_model(Xe: np.ndarray, Ye: np.ndarray) -> dict[str, float]:
        return classification_metrics(predict_model(Xe), Ye)

    def selection(stage: str, predict: Callable, epochs: int) -> tuple[list, dict[str, Callable]]:
        """The stage's EarlyStopping (and its validation accuracy metric); none without validation rows."""
        if valid is None:
            return [], {}
        rule = _Validation(valid, predict, gain_standard_errors)
        stop, metrics = rule.stopping(patience or max(epochs, 1), "val")
        out["_stops"][stage] = stop
        return [stop], metrics

    def record(stage: str, key: str, evaluate: Callable) -> None:
        stop = out["_stops"].get(stage)
        if stop is not None and stop.best_epoch is not None:
            out["chosen_epoch"][stage] = stop.best_epoch
        if valid is not None:
            out["validation"][key] = evaluate(*valid)
        if test is not None:
            out[key] = out["validation"][key] if test is valid else evaluate(*test)

    out["_stops"] = {}
    # 1. network + softmax head (the DNN baseline)
    head = None
    if model.num_features != model.num_classes:
        head = tf_keras.layers.Dense(model.num_classes, dtype=gpflow.default_float(), name="softmax_head")
        head.build((None, model.num_features))
    network = SoftmaxNetwork(model.feature_extractor, head)

    def evaluate_network(Xe: np.ndarray, Ye: np.ndarray) -> dict[str, float]:
        return classification_metrics(network.predict_proba(Xe), Ye)

    if network_epochs > 0:
        stops, metrics = selection("network", network.predict_proba, network_epochs)
        out["network_history"] = fit(
            network,
            train_data,
            epochs=network_epochs,
            learning_rate=s.network_learning_rate,
            optimizer=network_optimizer,
            logdir=stage_logdir("network"),
            callbacks=[Metrics(metrics), TensorBoard(log_parameters=False)] + stops,
            **common,
        )
    record("network", "dnn", evaluate_network)

    # 2. GP layer started where the network ends, then fit on the frozen network's features (DNN+GP). A
    # joint-only call continues training from the current model.
    if network_epochs > 0 or gp_epochs > 0:
        out["match"] = match_network(model, network, X, seed=s.seed)
    if gp_epochs > 0:
        stops, metrics = selection("gp", predict_model, gp_epochs)
        out["gp_history"] = fit(
            model,
            train_data,
            epochs=gp_epochs,
            learning_rate=s.gp_learning_rate,
            variables=model.gp_variables(),
            logdir=stage_logdir("gp"),
            callbacks=[Metrics(metrics), TensorBoard(log_parameters=False)] + stops,
            **common,
        )
    record("gp", "dnn_gp", evaluate_model)

    # 3. everything jointly (SV-DKL); never returns a model worse on validation than the one it started from
    if joint_epochs > 0:
        stops, metrics = selection("joint", predict_model, joint_epochs)
        kwargs: dict[str, Any] = dict(common, batch_size=joint_batch_size)
        kwargs.update(fit_kwargs or {})
        kwargs["callbacks"] = (
            [Metrics(metrics)] + list(kwargs.get("callbacks", ())) + [TensorBoard(log_parameters=False)] + stops
        )
        if s.joint_gp_learning_rate is not None:
            kwargs["optimizer"] = GroupedOptimizer(
                [
                    (tf_keras.optimizers.Adam(s.joint_learning_rate), model.network_variables()),
                    (tf_keras.optimizers.Adam(s.joint_gp_learning_rate), model.gp_variables()),
                ]
            )
        out["joint_history"] = fit(
            model,
            train_data,
            epochs=joint_epochs,
            learning_rate=s.joint_learning_rate,
            logdir=stage_logdir("joint"),
            **kwargs,
        )
    record("joint", "svdkl", evaluate_model)
    del out["_stops"]
    return out


def pretrain_and_fit(model: SVDKL, data: tuple[np.ndarray, np.ndarray], **options: Any) -> dict[str, Any]:
    """:func:`run_schedule` with the :class:`SVDKLSchedule` fields as keywords (``network_epochs=10``,
    ``gp_epochs=5``, ``joint_epochs=10``, ``batch_size=256``, ``validation_fraction=0.1``, ...) beside its own
    (``validation_data``, ``test_data``, ``logdir``, ``network_optimizer``, ``progress``, ``fit_kwargs``)."""
    fields = {f.name for f in dataclasses.fields(SVDKLSchedule)}
    schedule = {name: options.pop(name) for name in list(options) if name in fields}
    return run_schedule(model, data, SVDKLSchedule(**schedule), **options)
