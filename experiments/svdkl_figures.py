"""The SV-DKL scripts' figures (matplotlib): Figure 3, the learned deep kernel on test points sorted by class,
beside the mixing matrix A, and PNGs into TensorBoard."""
import io
from pathlib import Path

import numpy as np
import tensorflow as tf

__all__ = ["figure3", "image_to_tensorboard"]


def figure3(model, X_test: np.ndarray, y_test: np.ndarray, path: Path, per_class: int = 50, seed: int = 0) -> bytes:
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
    """Write a PNG image to the TensorBoard run ``logdir/figures`` under ``name``."""
    writer = tf.summary.create_file_writer(str(Path(logdir) / "figures"))
    with writer.as_default():
        tf.summary.image(name, tf.image.decode_png(png, channels=4)[None], step=step)
    writer.flush()
