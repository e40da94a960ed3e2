"""SV-DKL's Section 5 as a recipe: the pretrain → GP → joint schedule and the DNN / DNN+GP / SV-DKL comparison.

* :class:`SVDKLSchedule` + :func:`run_schedule` (and :func:`pretrain_and_fit`, the same with keywords): the
  network with a softmax head (the **DNN** baseline), the GP layer on the frozen network's features
  (**DNN+GP**), then everything jointly through the bound of eq. 4 (**SV-DKL**). Every stage runs through
  ``gpflow_ext.training.fit``.
* :class:`ThreeWayConfig` + :func:`run_three_way`: builds the SVDKL on a network and runs the schedule with the
  DNN stage's optimizer (Adam/AdamW/SGD, constant or cosine learning rate), returning the three models'
  test accuracy and NLP.
* :data:`PAPER_SETTINGS`: the settings behind the tables of ``docs/svdkl/results.md`` (UCI Adult and
  Connect-4, MNIST, airline, Diabetes), each a :class:`PaperSetting` (network + :class:`ThreeWayConfig`).

Networks are in :mod:`gpflow_ext.recipes.svdkl_networks`, preprocessing in
:mod:`~gpflow_ext.recipes.svdkl_preprocessing`; Figure 3 is drawn by the scripts (``experiments.svdkl_figures``).
"""

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gpflow
import numpy as np
from gpflow.keras import tf_keras

from ..models import SVDKL
from ..models.svdkl_arguments import num_features_of
from ..variational import KISSGPGrid
from ..variational.grid_priors import grid_prior_from_name
from .svdkl_networks import build_lenet, build_mlp, epochs_decayed_learning_rate, network_optimizer
from .svdkl_schedule import SVDKLSchedule, match_network, pretrain_and_fit, run_schedule, stratified_split

__all__ = [
    "SVDKLSchedule",
    "run_schedule",
    "pretrain_and_fit",
    "match_network",
    "stratified_split",
    "ThreeWayConfig",
    "run_three_way",
    "PaperSetting",
    "PAPER_SETTINGS",
    "run_digits",
]


@dataclasses.dataclass
class ThreeWayConfig:
    """DNN, DNN+GP and SV-DKL in one run (Section 5): the model's and the schedule's settings.

    ``grid_prior``: ``"toeplitz"`` or ``"circulant"`` (the grid prior objects of :mod:`gpflow_ext.variational`);
    ``network_lr_decay``: ``"constant"`` or ``"cosine"`` (to 0 over the DNN stage);
    ``network_optimizer``/``network_weight_decay``: see
    :func:`~gpflow_ext.recipes.svdkl_networks.network_optimizer` (DNN stage only); ``num_samples``: T, draws
    of u per training step (eq. 4); ``num_predict_samples``: Monte Carlo draws behind the DNN+GP and SV-DKL
    predictive probabilities; ``validation_fraction``/``patience``/``gain_standard_errors``: each stage's epoch is chosen on a stratified
    split of the training rows (see :class:`SVDKLSchedule`).
    """

    network_epochs: int = 10
    gp_epochs: int = 5
    joint_epochs: int = 10
    batch_size: int = 256
    joint_batch_size: int | None = None
    grid_size: int = 64
    grid_prior: str = "toeplitz"
    network_learning_rate: float = 1e-3
    network_lr_decay: str = "constant"
    network_optimizer: str = "adam"
    network_weight_decay: float = 0.0
    gp_learning_rate: float = 1e-2
    joint_learning_rate: float = 1e-4
    joint_gp_learning_rate: float | None = None
    num_samples: int = 1
    num_predict_samples: int = 16
    validation_fraction: float = 0.1
    patience: int | None = None
    gain_standard_errors: float = 2.0
    seed: int = 0

    def schedule(self) -> SVDKLSchedule:
        """The :class:`SVDKLSchedule` part of the settings (the DNN stage's optimizer is built separately)."""
        names = {f.name for f in dataclasses.fields(SVDKLSchedule)}
        return SVDKLSchedule(**{k: v for k, v in dataclasses.asdict(self).items() if k in names})


def run_three_way(
    network: tf_keras.Model,
    num_classes: int,
    train: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
    config: ThreeWayConfig,
    *,
    logdir: Path | None = None,
    progress: bool = True,
) -> tuple[SVDKL, dict[str, Any], float, dict[str, float]]:
    """Build an SVDKL on ``network`` (a KISS-GP grid of ``config.grid_size`` points per GP, a linear mean of the
    class scores, so the GP layer starts exactly at the network's head) and run the schedule.

    Returns ``(model, out, seconds, median_seconds_per_epoch)``: ``out`` as :func:`run_schedule`, each stage
    chosen on a validation split of ``train`` and scored once on ``test``; the median seconds per epoch of each
    stage that ran.
    """
    c = config
    learning_rate = epochs_decayed_learning_rate(
        c.network_learning_rate, c.network_lr_decay, c.network_epochs, len(train[0]), c.batch_size
    )
    optimizer = network_optimizer(c.network_optimizer, learning_rate, c.network_weight_decay)
    Q = num_features_of(network, None)
    model = SVDKL(
        network,
        num_classes,
        num_data=len(train[0]),
        num_samples=c.num_samples,
        inducing=KISSGPGrid(c.grid_size, prior=grid_prior_from_name(c.grid_prior)),
        mean_function=gpflow.mean_functions.Linear(np.zeros((Q, num_classes)), np.zeros(num_classes)),
    )
    t0 = time.perf_counter()
    out = run_schedule(
        model,
        train,
        c.schedule(),
        network_optimizer=optimizer,  # carries the (decayed) network learning rate
        test_data=test,
        logdir=None if logdir is None else str(logdir),
        progress=progress,
    )
    seconds = time.perf_counter() - t0
    timing = {
        stage: float(np.median(out[f"{stage}_history"].seconds_per_epoch))
        for stage in ("network", "gp", "joint")
        if f"{stage}_history" in out
    }
    return model, out, seconds, timing


@dataclasses.dataclass
class PaperSetting:
    """One table's setting: the network (``"mlp"`` with ``hidden`` layers, or ``"lenet"``) and the run's config."""

    network: str
    config: ThreeWayConfig
    hidden: Sequence[int] = (1000, 1000, 500, 50)

    def build_network(self, input_dim: Any, num_classes: int, seed: int = 0, dropout: float = 0.0) -> tf_keras.Model:
        if self.network == "lenet":
            return build_lenet(num_classes, seed=seed)
        return build_mlp(int(input_dim), num_classes, tuple(self.hidden), seed=seed, dropout=dropout)


#: the settings of docs/svdkl/results.md (epochs network / GP / joint; Adam, joint learning rate 1e-4)
PAPER_SETTINGS: dict[str, PaperSetting] = {
    "adult": PaperSetting("mlp", ThreeWayConfig(network_epochs=3, gp_epochs=5, joint_epochs=3)),
    "connect4": PaperSetting("mlp", ThreeWayConfig(network_epochs=8, gp_epochs=3, joint_epochs=5)),
    "mnist": PaperSetting("lenet", ThreeWayConfig(network_epochs=10, gp_epochs=5, joint_epochs=10)),
    "airline": PaperSetting("mlp", ThreeWayConfig(network_epochs=6, gp_epochs=3, joint_epochs=6, batch_size=2000)),
    "diabetes": PaperSetting("mlp", ThreeWayConfig(network_epochs=5, gp_epochs=2, joint_epochs=5, batch_size=2000)),
    "digits": PaperSetting(
        "mlp",
        ThreeWayConfig(
            network_epochs=12, gp_epochs=6, joint_epochs=8, batch_size=128, grid_size=32, joint_learning_rate=1e-3
        ),
        hidden=(128, 64),
    ),
}


def run_digits(
    quick: bool = True,
    grid_prior: str = "toeplitz",
    *,
    logdir: Path | None = None,
    seed: int = 0,
    epochs: int | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """DNN, DNN+GP and SV-DKL on scikit-learn's digits (1797 8×8 images, no download): the tour's SV-DKL stop.

    ``quick``: :data:`PAPER_SETTINGS` ``"digits"`` epochs (12 / 6 / 8; about a minute on 2 CPU cores), else
    40 / 15 / 30; ``epochs`` E replaces them by E network, max(1, E//2) GP and E joint epochs. Returns the
    test accuracy and NLP of the three models and each stage's epoch chosen on validation rows.
    """
    from ..data import load_digits

    split = load_digits(test_fraction=0.25, seed=seed)
    setting = PAPER_SETTINGS["digits"]
    if epochs is not None:
        stages = (epochs, max(1, epochs // 2), epochs)
    else:
        stages = (12, 6, 8) if quick else (40, 15, 30)
    config = dataclasses.replace(
        setting.config,
        network_epochs=stages[0],
        gp_epochs=stages[1],
        joint_epochs=stages[2],
        grid_prior=grid_prior,
        seed=seed,
    )
    t0 = time.perf_counter()
    _, out, _, _ = run_three_way(
        setting.build_network(64, 10, seed=seed),
        10,
        (split.X_train, split.y_train),
        (split.X_test, split.y_test),
        config,
        logdir=logdir,
        progress=progress,
    )
    result = {
        "dataset": "sklearn digits",
        "grid_prior": grid_prior,
        "dnn_accuracy": out["dnn"]["accuracy"],
        "dnn_nlp": out["dnn"]["nlp"],
        "dnn_gp_accuracy": out["dnn_gp"]["accuracy"],
        "dnn_gp_nlp": out["dnn_gp"]["nlp"],
        "svdkl_accuracy": out["svdkl"]["accuracy"],
        "svdkl_nlp": out["svdkl"]["nlp"],
        "chosen_epoch": out["chosen_epoch"],
        "seconds": time.perf_counter() - t0,
    }
    print(
        f"SV-DKL tour (digits, {len(split.X_train)} train / {len(split.X_test)} test): "
        f"DNN acc {result['dnn_accuracy']:.4f}, DNN+GP acc {result['dnn_gp_accuracy']:.4f}, "
        f"SV-DKL acc {result['svdkl_accuracy']:.4f} (NLP {result['svdkl_nlp']:.4f}) in {result['seconds']:.0f} s"
    )
    return result
