"""Shared pieces of the SV-DKL experiments: networks, the DNN / DNN+GP / SV-DKL run, Figure 3."""
import io
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

try:  # run as a script or imported from tests
    from experiments import common  # noqa: F401
except ImportError:  # pragma: no cover
    import common  # type: ignore  # noqa: F401

import gpflow
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ext.models import SVDKL, pretrain_and_fit
from gpflow_ext.training import decayed_learning_rate as training_decayed_learning_rate

F64 = gpflow.default_float()


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


def majority_rate(y_train: np.ndarray, y_test: np.ndarray) -> float:
    """Test accuracy of always predicting the training set's most frequent class."""
    majority = np.bincount(np.asarray(y_train, dtype=np.int64)).argmax()
    return float(np.mean(np.asarray(y_test) == majority))


def mean_sd(values) -> Dict[str, float]:
    """``{"mean", "sd", "n"}`` of a list of numbers (population sd, 0 for one value)."""
    values = np.asarray(values, dtype=np.float64)
    return {"mean": float(values.mean()), "sd": float(values.std()), "n": int(values.size)}


def fmt(stat, digits=4):
    """``mean ± sd`` text of a :func:`mean_sd` dict (``None`` for None)."""
    if stat is None:
        return None
    return f"{stat['mean']:.{digits}f} ± {stat['sd']:.{digits}f}"


def stage_seconds(out: Dict[str, Any]) -> Dict[str, float]:
    """Total training seconds of each stage that ran (sum of its epochs' step times)."""
    return {stage: float(np.sum(out[f"{stage}_history"].seconds_per_epoch))
            for stage in ("network", "gp", "joint") if f"{stage}_history" in out}


def add_network_arguments(parser) -> None:
    """Command-line options of the DNN stage's optimizer (learning rate, its decay, optimizer, weight decay)."""
    parser.add_argument("--network-lr", type=float, default=1e-3, help="learning rate of the DNN stage")
    parser.add_argument("--network-lr-decay", choices=["constant", "cosine"], default="constant",
                        help="the DNN stage's learning rate: constant, or cosine-decayed to 0 over its epochs")
    parser.add_argument("--network-optimizer", choices=NETWORK_OPTIMIZERS, default="adam",
                        help="the DNN stage's optimizer: adam (AdamW when weight decay > 0) or sgd (momentum 0.9)")
    parser.add_argument("--network-weight-decay", type=float, default=0.0,
                        help="decoupled weight decay of the DNN stage (w -= lr * wd * w each step; Caffe's "
                             "coupled 5e-4 under momentum 0.9 is about 5e-3 here)")


def network_options(args) -> Dict[str, Any]:
    """``run_three_way`` keywords from the options of :func:`add_network_arguments`."""
    return dict(
        network_learning_rate=args.network_lr, network_lr_decay=args.network_lr_decay,
        network_optimizer_name=args.network_optimizer, network_weight_decay=args.network_weight_decay,
    )


def stage_options(args, epochs: int) -> Dict[str, Any]:
    """``run_three_way`` keywords from the options of :func:`add_stage_arguments`: E = ``epochs`` for the
    DNN and joint stages and max(1, E // 2) for the GP stage unless ``--*-epochs`` override them."""
    return dict(
        network_epochs=epochs if args.network_epochs is None else args.network_epochs,
        gp_epochs=max(1, epochs // 2) if args.gp_epochs is None else args.gp_epochs,
        joint_epochs=epochs if args.joint_epochs is None else args.joint_epochs,
        joint_learning_rate=args.joint_lr, joint_gp_learning_rate=args.joint_gp_lr,
        joint_batch_size=args.joint_batch_size,
        grid_prior=args.grid_prior, num_samples=args.num_samples, num_predict_samples=args.predict_samples,
        progress=not args.no_progress, **network_options(args),
    )


def add_stage_arguments(parser) -> None:
    """Command-line options of the DNN -> DNN+GP -> SV-DKL schedule shared by both SV-DKL scripts."""
    parser.add_argument("--network-epochs", type=int, default=None, help="override E for the DNN stage")
    parser.add_argument("--gp-epochs", type=int, default=None, help="override max(1, E//2) for the GP stage")
    parser.add_argument("--joint-epochs", type=int, default=None, help="override E for the joint stage")
    parser.add_argument("--joint-lr", type=float, default=1e-4, help="Adam learning rate of the joint stage")
    parser.add_argument("--joint-gp-lr", type=float, default=None,
                        help="Adam learning rate of the GP layer in the joint stage (default: --joint-lr for "
                             "everything; a value keeps --joint-lr for the network weights only)")
    parser.add_argument("--joint-batch-size", type=int, default=None,
                        help="minibatch size of the joint stage (default: --batch-size)")
    add_network_arguments(parser)
    parser.add_argument("--grid-prior", choices=["toeplitz", "circulant"], default="toeplitz",
                        help="K_ZZ of the grid GPs: exact Toeplitz (Cholesky) or circulant embedding (FFT)")
    parser.add_argument("--num-samples", type=int, default=1,
                        help="T, draws of u per training step of the GP and joint stages (eq. 4; the paper's 1)")
    parser.add_argument("--predict-samples", type=int, default=16,
                        help="Monte Carlo draws behind the DNN+GP / SV-DKL predictive probabilities")
    parser.add_argument("--no-progress", action="store_true")


def build_mlp(input_dim: int, num_outputs: int, hidden: Sequence[int] = (1000, 1000, 500, 50), seed: int = 0,
              dropout: float = 0.0):
    """The paper's fully connected d-1000-1000-500-50-c ReLU network (Section 5.1/5.2).

    ``dropout > 0`` adds a ``Dropout(dropout)`` after every hidden ReLU (active in training steps, off in
    prediction); the paper does not use it."""
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
    tf_keras.utils.set_random_seed(seed)
    F64 = gpflow.default_float()  # at call time: float32 after gpflow.config.set_default_float(np.float32)
    layers = [tf_keras.Input((input_dim,), dtype=F64)]
    for h in hidden:
        layers.append(tf_keras.layers.Dense(h, activation="relu", dtype=F64))
        if dropout > 0:
            layers.append(tf_keras.layers.Dropout(dropout, seed=seed, dtype=F64))
    layers += [tf_keras.layers.Dense(num_outputs, dtype=F64)]
    return tf_keras.Sequential(layers, name="mlp")


def build_lenet(num_outputs: int = 10, seed: int = 0, input_shape=(28, 28, 1)):
    """Caffe's LeNet for MNIST: conv20(5) - pool - conv50(5) - pool - fc500 - fc c."""
    tf_keras.utils.set_random_seed(seed)
    F64 = gpflow.default_float()
    return tf_keras.Sequential(
        [
            tf_keras.Input(input_shape, dtype=F64),
            tf_keras.layers.Conv2D(20, 5, dtype=F64),
            tf_keras.layers.MaxPooling2D(2, dtype=F64),
            tf_keras.layers.Conv2D(50, 5, dtype=F64),
            tf_keras.layers.MaxPooling2D(2, dtype=F64),
            tf_keras.layers.Flatten(dtype=F64),
            tf_keras.layers.Dense(500, activation="relu", dtype=F64),
            tf_keras.layers.Dense(num_outputs, dtype=F64),
        ],
        name="lenet",
    )


ADULT_HEAVY_TAILED = ("capital-gain", "capital-loss")


def log1p_features(X: np.ndarray, feature_names: Sequence[str], columns: Sequence[str]) -> np.ndarray:
    """A copy of ``X`` with log(1 + x) applied to the named non-negative columns.

    Adult's capital-gain / capital-loss are 0 for ~92 % of rows and reach 99 999; after standardising, a
    handful of rows sit 13 standard deviations out and dominate the first layer's inputs.
    """
    X = np.array(X, dtype=np.float64, copy=True)
    for name in columns:
        if name not in feature_names:
            raise ValueError(f"columns: {name!r} is not a feature name (have {list(feature_names)[:8]}...)")
        j = list(feature_names).index(name)
        if np.any(X[:, j] < 0):
            raise ValueError(f"columns: {name!r} has negative values; log1p needs x >= 0")
        X[:, j] = np.log1p(X[:, j])
    return X


INDICATOR_SCALINGS = ("standardise", "keep")


def standardise(train: np.ndarray, *others: np.ndarray, indicators: str = "standardise"):
    """Zero-mean unit-variance columns using the training statistics (constant columns left at 0).

    ``indicators="keep"`` leaves the 0/1 indicator columns of the training set (one-hot categories) as they are
    and standardises only the others. Standardising an indicator that is 1 in k of N rows makes it
    about sqrt(N / k) where it is set: about 180 for Adult's rarest native country (1 row in 32 561).
    """
    if indicators not in INDICATOR_SCALINGS:
        raise ValueError(f"indicators must be one of {INDICATOR_SCALINGS}, got {indicators!r}")
    mean = train.mean(0)
    std = train.std(0)
    std[std == 0] = 1.0
    if indicators == "keep":
        binary = np.all((train == 0) | (train == 1), axis=0)  # [D] one-hot / indicator columns
        mean = np.where(binary, 0.0, mean)
        std = np.where(binary, 1.0, std)
    return [(a - mean) / std for a in (train,) + others]


def decayed_learning_rate(learning_rate: float, decay: str, epochs: int, num_data: int, batch_size: int):
    """``learning_rate`` itself (``decay="constant"``) or a cosine decay from it to 0 over ``epochs`` epochs
    of ceil(num_data / batch_size) steps each (``"cosine"``)."""
    steps = epochs * -(-num_data // min(batch_size, num_data))  # epochs × ceil(N / B)
    return training_decayed_learning_rate(learning_rate, decay, steps, name="network_lr_decay")


NETWORK_OPTIMIZERS = ("adam", "sgd")


def network_optimizer(name: str, learning_rate, weight_decay: float = 0.0):
    """The DNN stage's tf_keras optimizer: ``"adam"`` (``AdamW`` when ``weight_decay > 0``) or ``"sgd"``
    (momentum 0.9, as Caffe's LeNet solver). ``learning_rate`` may be a schedule."""
    if name not in NETWORK_OPTIMIZERS:
        raise ValueError(f"network_optimizer must be one of {NETWORK_OPTIMIZERS}, got {name!r}")
    if not np.isfinite(weight_decay) or weight_decay < 0:
        raise ValueError(f"network_weight_decay must be a finite number >= 0, got {weight_decay!r}")
    if name == "sgd":
        return tf_keras.optimizers.SGD(learning_rate, momentum=0.9, weight_decay=weight_decay or None)
    if weight_decay > 0:
        return tf_keras.optimizers.AdamW(learning_rate, weight_decay=weight_decay)
    return tf_keras.optimizers.Adam(learning_rate)


def run_three_way(
    network,
    num_classes: int,
    train: tuple,
    test: tuple,
    *,
    network_epochs: int,
    gp_epochs: int,
    joint_epochs: int,
    batch_size: int,
    joint_batch_size: Optional[int] = None,
    grid_size: int = 64,
    grid_prior: str = "toeplitz",
    network_learning_rate: float = 1e-3,
    network_lr_decay: str = "constant",
    network_optimizer_name: str = "adam",
    network_weight_decay: float = 0.0,
    gp_learning_rate: float = 1e-2,
    joint_learning_rate: float = 1e-4,
    joint_gp_learning_rate: Optional[float] = None,
    num_samples: int = 1,
    num_predict_samples: int = 16,
    logdir: Optional[Path] = None,
    seed: int = 0,
    progress: bool = True,
):
    """DNN, DNN+GP (GP on the frozen pre-trained features) and SV-DKL in one run (Section 5).

    ``network_lr_decay="cosine"`` decays the DNN stage's learning rate from ``network_learning_rate``
    to 0 over its ``network_epochs`` (``tf_keras`` ``CosineDecay``); ``"constant"`` keeps it fixed.
    ``network_optimizer_name`` / ``network_weight_decay``: see :func:`network_optimizer` (DNN stage only).
    ``num_samples``: T, draws of u per training step (eq. 4); ``num_predict_samples``: Monte Carlo draws
    behind the DNN+GP and SV-DKL predictive probabilities.
    """
    network_learning_rate = decayed_learning_rate(
        network_learning_rate, network_lr_decay, network_epochs, len(train[0]), batch_size
    )
    optimizer = network_optimizer(network_optimizer_name, network_learning_rate, network_weight_decay)
    model = SVDKL(
        network, num_classes, num_data=len(train[0]), grid_size=grid_size, grid_prior=grid_prior, num_samples=num_samples
    )
    t0 = time.perf_counter()
    out = pretrain_and_fit(
        model,
        train,
        network_epochs=network_epochs,
        gp_epochs=gp_epochs,
        joint_epochs=joint_epochs,
        batch_size=batch_size,
        joint_batch_size=joint_batch_size,
        network_optimizer=optimizer,  # carries the (decayed) network learning rate
        gp_learning_rate=gp_learning_rate,
        joint_learning_rate=joint_learning_rate,
        joint_gp_learning_rate=joint_gp_learning_rate,
        validation_data=test,
        num_predict_samples=num_predict_samples,
        seed=seed,
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


def figure3(model: SVDKL, X_test: np.ndarray, y_test: np.ndarray, path: Path, per_class: int = 50, seed: int = 0):
    """Figure 3: the learned deep-kernel covariance on test points sorted by class, and A."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(seed)
    picked = np.concatenate(
        [rng.permutation(np.flatnonzero(y_test == c))[:per_class] for c in range(model.num_classes)]
    )
    K = model.deep_kernel(X_test[picked])
    A = model.likelihood.mixing.numpy()
    fig, axes = plt.subplots(1, 2, figsize=(11, 5))
    im = axes[0].imshow(K, cmap="viridis")
    axes[0].set_title("deep kernel on test points (sorted by class)")
    bounds = np.cumsum([np.sum(y_test[picked] == c) for c in range(model.num_classes)])[:-1]
    for b in bounds:
        axes[0].axhline(b - 0.5, color="w", lw=0.5)
        axes[0].axvline(b - 0.5, color="w", lw=0.5)
    fig.colorbar(im, ax=axes[0], fraction=0.046)
    im2 = axes[1].imshow(A, cmap="RdBu_r", vmin=-np.abs(A).max(), vmax=np.abs(A).max())
    axes[1].set_title("mixing matrix A [C, J]")
    axes[1].set_xlabel("GP j")
    axes[1].set_ylabel("class c")
    fig.colorbar(im2, ax=axes[1], fraction=0.046)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    path.write_bytes(buf.getvalue())
    plt.close(fig)
    return buf.getvalue()


def image_to_tensorboard(png: bytes, logdir: Path, name: str, step: int = 0) -> None:
    writer = tf.summary.create_file_writer(str(Path(logdir) / "figures"))
    with writer.as_default():
        tf.summary.image(name, tf.image.decode_png(png, channels=4)[None], step=step)
    writer.flush()


def result_rows(dataset: str, out: Dict[str, Any], paper_acc: Dict[str, float], paper_nlp: Dict[str, float],
                dnn_name: str = "DNN") -> List[Dict[str, Any]]:
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
            }
        )
    return rows
