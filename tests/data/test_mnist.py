"""MNIST idx and CSV readers, the downscale helper, and idx format checks."""
import gzip

import numpy as np
import pytest

from gpflow_ext.data import DataFormatError, downscale, load_mnist, read_idx, read_mnist_images, read_mnist_labels


def test_mnist_idx_counts(dataset_path):
    folder = dataset_path("mnist")
    images, labels = load_mnist(folder, subset="test", download=False)
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8
    np.testing.assert_array_equal(np.bincount(labels), [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009])
    train_images, train_labels = load_mnist(folder, subset="train", download=False)
    assert train_images.shape == (60000, 28, 28) and train_images.dtype == np.uint8
    np.testing.assert_array_equal(np.bincount(train_labels), [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949])
    assert train_images.mean() == pytest.approx(33.318, abs=5e-4)
    # the 5000 CSV digits are MNIST training digits with the same labels
    digits, digit_labels = load_mnist(folder, subset="5k", download=False)
    assert digits.shape == (5000, 28, 28) and digits.dtype == np.uint8
    np.testing.assert_array_equal(np.bincount(digit_labels), [500] * 10)
    index = {image.tobytes(): i for i, image in enumerate(train_images)}
    positions = np.array([index[digit.tobytes()] for digit in digits])
    np.testing.assert_array_equal(train_labels[positions], digit_labels)
    assert positions[:4].tolist() == [1, 21, 34, 37]  # as recorded in shared/data/README.md


def test_downscale_is_2x2_average_pooling(rng):
    images = rng.integers(0, 256, size=(3, 28, 28)).astype(np.uint8)
    small = downscale(images, 14)
    assert small.shape == (3, 14, 14)
    brute = np.array([[[images[n, 2 * i : 2 * i + 2, 2 * j : 2 * j + 2].mean() for j in range(14)] for i in range(14)]
                      for n in range(3)])
    np.testing.assert_allclose(small, brute, rtol=0, atol=1e-12)
    np.testing.assert_allclose(downscale(images.reshape(3, 784), 14), brute.reshape(3, 196), atol=1e-12)
    with pytest.raises(ValueError, match="divisor of the image side 28"):
        downscale(images, 10)
    with pytest.raises(ValueError, match="shape"):
        downscale(np.zeros((3, 28, 27)), 14)


def _idx(magic: bytes, dims, payload: bytes) -> bytes:
    return magic + b"".join(int(d).to_bytes(4, "big") for d in dims) + payload


def test_idx_reader_checks_magic_and_size(tmp_path):
    good = tmp_path / "labels-idx1-ubyte.gz"
    good.write_bytes(gzip.compress(_idx(b"\x00\x00\x08\x01", [3], bytes([1, 2, 9]))))
    np.testing.assert_array_equal(read_mnist_labels(good), [1, 2, 9])
    floats = tmp_path / "floats-idx2"
    floats.write_bytes(_idx(b"\x00\x00\x0d\x02", [2, 2], np.arange(4, dtype=">f4").tobytes()))
    np.testing.assert_array_equal(read_idx(floats), [[0, 1], [2, 3]])
    cases = {
        "short-idx1": (_idx(b"\x00\x00\x08\x01", [4], bytes(3)), "header says shape \\(4,\\)"),
        "magic-idx1": (b"PK\x03\x04" + bytes(8), "not an idx file"),
        "type-idx1": (_idx(b"\x00\x00\x07\x01", [1], bytes(1)), "not an idx file"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(DataFormatError, match=message):
            read_idx(path)
    with pytest.raises(DataFormatError, match="idx3 uint8 image"):
        read_mnist_images(good)
    not_gzip = tmp_path / "fake.gz"
    not_gzip.write_bytes(b"plain text")
    with pytest.raises(DataFormatError, match="cannot read"):
        read_idx(not_gzip)
    with pytest.raises(ValueError, match="subset must be one of"):
        load_mnist(tmp_path, subset="valid")
