"""The SV-DKL scripts' shared command line: the schedule's options (-> :class:`gpflow_ext.recipes.svdkl.ThreeWayConfig`
fields), seeds, result rows. Networks, preprocessing, the runs and Figure 3 are in :mod:`gpflow_ext.recipes.svdkl`."""
from pathlib import Path
from typing import Any

import numpy as np

from experiments.common import add_dataclass_arguments, config_from_args
from gpflow_ext.recipes.svdkl import ThreeWayConfig
from gpflow_ext.recipes.svdkl_networks import NETWORK_OPTIMIZERS


def experiment_parser(description: str):
    """The shared command line of the SV-DKL scripts, defaults shown by ``--help``: ``--data-dir``,
    ``--output``, ``--logdir``, ``--float32``, ``--figure-dir``, ``--smoke`` (each script adds ``--seeds``
    or ``--seed`` and its own options)."""
    import argparse
    import os

    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=os.environ.get("GPFLOW_EXT_DATA"),
                        help="folder laid out like shared/data; the default is $GPFLOW_EXT_DATA")
    parser.add_argument("--output", type=Path, default=None, help="write the results JSON here")
    parser.add_argument("--logdir", type=Path, default=None,
                        help="TensorBoard folder (a fresh one: an existing run's checkpoints are resumed)")
    parser.add_argument("--float32", action="store_true", help="train and predict in float32 instead of float64")
    parser.add_argument("--figure-dir", type=Path, default=None, help="folder for the PNG figures")
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny run that checks the pipeline: 3000 rows, network 32-8, grid 16, batch 256, "
                             "E = 1 (these replace --hidden, --grid-size, --batch-size, --epochs)")
    return parser


def parse_seeds(text: str):
    """``"0,1,2"`` -> ``[0, 1, 2]`` (at least one, no repeats)."""
    try:
        seeds = [int(s) for s in str(text).split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--seeds must be comma-separated integers, got {text!r}") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds must name at least one seed, without repeats, got {text!r}")
    return seeds


def mean_sd(values) -> dict[str, float]:
    """``{"mean", "sd", "n"}`` of a list of numbers (population sd, 0 for one value)."""
    values = np.asarray(values, dtype=np.float64)
    return {"mean": float(values.mean()), "sd": float(values.std()), "n": int(values.size)}


def fmt(stat, digits=4):
    """``mean ± sd`` text of a :func:`mean_sd` dict (``None`` for None)."""
    if stat is None:
        return None
    return f"{stat['mean']:.{digits}f} ± {stat['sd']:.{digits}f}"


def stage_seconds(out: dict[str, Any]) -> dict[str, float]:
    """Total training seconds of each stage that ran (sum of its epochs' step times)."""
    return {stage: float(np.sum(out[f"{stage}_history"].seconds_per_epoch))
            for stage in ("network", "gp", "joint") if f"{stage}_history" in out}


#: ``{ThreeWayConfig field: flag}`` of the DNN stage's optimizer options (defaults: the dataclass's)
NETWORK_FLAGS = {
    "network_learning_rate": "--network-lr",
    "network_lr_decay": "--network-lr-decay",
    "network_optimizer": "--network-optimizer",
    "network_weight_decay": "--network-weight-decay",
}
#: ``{ThreeWayConfig field: flag}`` of the joint stage
JOINT_FLAGS = {
    "joint_learning_rate": "--joint-lr",
    "joint_gp_learning_rate": "--joint-gp-lr",
    "joint_batch_size": "--joint-batch-size",
}
#: ``{ThreeWayConfig field: flag}`` of the GP layer, the Monte Carlo draws and the choice of each stage's epoch
SCHEDULE_FLAGS = {
    "grid_prior": "--grid-prior",
    "num_samples": "--num-samples",
    "num_predict_samples": "--predict-samples",
    "validation_fraction": "--validation-fraction",
    "patience": "--patience",
    "gain_standard_errors": "--gain-standard-errors",
}
#: ``{ThreeWayConfig field: flag}`` of the minibatch and grid sizes
SIZE_FLAGS = {"batch_size": "--batch-size", "grid_size": "--grid-size"}
FLAG_HELP = {
    "grid_size": "points per KISS-GP grid",
    "network_learning_rate": "learning rate of the DNN stage",
    "network_lr_decay": "the DNN stage's learning rate: constant, or cosine-decayed to 0 over its epochs",
    "network_optimizer": "the DNN stage's optimizer: adam (AdamW when weight decay > 0) or sgd (momentum 0.9)",
    "network_weight_decay": "decoupled weight decay of the DNN stage (w -= lr * wd * w each step; Caffe's "
                            "coupled 5e-4 under momentum 0.9 is about 5e-3 here)",
    "joint_learning_rate": "Adam learning rate of the joint stage",
    "joint_gp_learning_rate": "Adam learning rate of the GP layer in the joint stage (default: --joint-lr for "
                              "everything; a value keeps --joint-lr for the network weights only)",
    "joint_batch_size": "minibatch size of the joint stage (default: --batch-size)",
    "grid_prior": "K_ZZ of the grid GPs: exact Toeplitz (Cholesky) or circulant embedding (FFT)",
    "num_samples": "T, draws of u per training step of the GP and joint stages (eq. 4; the paper's 1)",
    "num_predict_samples": "Monte Carlo draws behind the DNN+GP / SV-DKL predictive probabilities",
    "validation_fraction": "share of the training rows held out (stratified) to choose each stage's epoch: the "
                           "lowest validation NLP among epochs at least as accurate as the stage's start and "
                           "clearly below its NLP (0: keep each stage's last epoch, train on every row)",
    "gain_standard_errors": "a stage leaves its start only for a validation NLP lower by more than this many "
                            "standard errors of the per-row paired difference (0: any lower NLP)",
    "patience": "stop a stage after this many epochs without a better validation score (default: run every "
                "epoch, keep the best)",
}
FLAG_CHOICES = {
    "network_lr_decay": ["constant", "cosine"],
    "network_optimizer": NETWORK_OPTIMIZERS,
    "grid_prior": ["toeplitz", "circulant"],
}


def add_size_arguments(parser, names=("batch_size", "grid_size")) -> None:
    """``--batch-size`` and/or ``--grid-size`` with :class:`~gpflow_ext.recipes.svdkl.ThreeWayConfig`'s defaults."""
    add_dataclass_arguments(parser, ThreeWayConfig, {name: SIZE_FLAGS[name] for name in names}, help=FLAG_HELP)


def add_network_arguments(parser) -> None:
    """Command-line options of the DNN stage's optimizer (learning rate, its decay, optimizer, weight decay),
    generated from :class:`~gpflow_ext.recipes.svdkl.ThreeWayConfig` (its defaults)."""
    add_dataclass_arguments(parser, ThreeWayConfig, NETWORK_FLAGS, help=FLAG_HELP, choices=FLAG_CHOICES)


def network_options(args) -> dict[str, Any]:
    """``ThreeWayConfig`` fields from the options of :func:`add_network_arguments`."""
    return config_from_args(ThreeWayConfig, args, NETWORK_FLAGS)


def stage_options(args, epochs: int) -> dict[str, Any]:
    """``ThreeWayConfig`` fields from the options of :func:`add_stage_arguments`: E = ``epochs`` for the
    DNN and joint stages and max(1, E // 2) for the GP stage unless ``--*-epochs`` override them."""
    return dict(
        network_epochs=epochs if args.network_epochs is None else args.network_epochs,
        gp_epochs=max(1, epochs // 2) if args.gp_epochs is None else args.gp_epochs,
        joint_epochs=epochs if args.joint_epochs is None else args.joint_epochs,
        **config_from_args(ThreeWayConfig, args, {**JOINT_FLAGS, **SCHEDULE_FLAGS, **NETWORK_FLAGS}),
    )


def add_stage_arguments(parser) -> None:
    """Command-line options of the DNN -> DNN+GP -> SV-DKL schedule shared by the SV-DKL scripts, generated from
    :class:`~gpflow_ext.recipes.svdkl.ThreeWayConfig` (its defaults) but for the epochs (``E`` of each script)."""
    parser.add_argument("--network-epochs", type=int, default=None, help="override E for the DNN stage")
    parser.add_argument("--gp-epochs", type=int, default=None, help="override max(1, E//2) for the GP stage")
    parser.add_argument("--joint-epochs", type=int, default=None, help="override E for the joint stage")
    add_dataclass_arguments(parser, ThreeWayConfig, JOINT_FLAGS, help=FLAG_HELP, choices=FLAG_CHOICES)
    add_network_arguments(parser)
    add_dataclass_arguments(parser, ThreeWayConfig, SCHEDULE_FLAGS, help=FLAG_HELP, choices=FLAG_CHOICES)
    parser.add_argument("--no-progress", action="store_true")


def result_rows(dataset: str, out: dict[str, Any], paper_acc: dict[str, float], paper_nlp: dict[str, float],
                dnn_name: str = "DNN") -> list[dict[str, Any]]:
    rows = []
    for key, name in (("dnn", dnn_name), ("dnn_gp", f"{dnn_name}+GP"), ("svdkl", "SV-DKL")):
        rows.append(
            {
                "dataset": dataset,
                "model": name,
                "accuracy": out[key]["accuracy"],
                "paper_accuracy": paper_acc.get(name),
                "nlp": out[key]["nlp"],
                "paper_nlp": paper_nlp.get(name),
                "chosen_epoch": out.get("chosen_epoch", {}).get({"dnn": "network", "dnn_gp": "gp", "svdkl": "joint"}[key]),
            }
        )
    return rows
