"""Damaged or mislabelled files: every decompression or decoding failure is a DataFormatError naming the file."""
import gzip
import lzma

import numpy as np
import pytest

from gpflow_ext.data import DataFormatError, read_idx, read_mulan_arff, read_ratings, read_xmc_text
from gpflow_ext.data._io import open_text

XMC = "400 3 2\n" + "".join(f"{i % 2} {i % 3}:1\n" for i in range(400))
XML = '<labels><label name="a"/><label name="b"/></labels>'
# random values, so the compressed stream is long and breaks off well after the header
ARFF = "@relation r\n@attribute x numeric\n@attribute a {0,1}\n@attribute b {0,1}\n@data\n" + "".join(
    f"{value:.12f},{int(value > 0.5)},1\n" for value in np.random.default_rng(0).random(20000))


def _truncated_gz(path, text):
    data = gzip.compress(text.encode())
    path.write_bytes(data[: len(data) // 2])
    return path


def test_truncated_gz_names_file_and_line(tmp_path):
    path = _truncated_gz(tmp_path / "train.arff.gz", ARFF)
    (tmp_path / "l.xml").write_text(XML)
    with pytest.raises(DataFormatError, match=r"train\.arff\.gz: line \d+: truncated gzip file") as error:
        read_mulan_arff(path, tmp_path / "l.xml")
    assert not isinstance(error.value.__cause__, EOFError)  # no bare EOFError in the chain shown to users
    line = int(str(error.value).split("line ")[1].split(":")[0])
    assert 6 < line <= ARFF.count("\n") + 1  # past the header: the rows before it were read
    with pytest.raises(DataFormatError, match=r"ratings\.gz: truncated gzip file"):  # whole-file reads name the file
        read_ratings(_truncated_gz(tmp_path / "ratings.gz", "1\t2\t3\t4\n" * 5000))


def test_plain_file_named_gz(tmp_path):
    path = tmp_path / "data.txt.gz"
    path.write_text(XMC)
    with pytest.raises(DataFormatError, match=r"data\.txt\.gz: line 1: not a gzip file.*cannot read: BadGzipFile"):
        read_xmc_text(path)
    idx = tmp_path / "labels-idx1-ubyte.gz"
    idx.write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x02\x01\x02")
    with pytest.raises(DataFormatError, match=r"labels-idx1-ubyte\.gz: not a gzip file"):
        read_idx(idx)


def test_truncated_and_mislabelled_xz(tmp_path):
    data = lzma.compress(XMC.encode())
    path = tmp_path / "data.txt.xz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataFormatError, match=r"data\.txt\.xz: line \d+: truncated xz file"):
        read_xmc_text(path)
    path.write_text(XMC)
    with pytest.raises(DataFormatError, match=r"data\.txt\.xz: line 1: not a valid xz file"):
        read_xmc_text(path)
    idx = tmp_path / "labels-idx1-ubyte.xz"
    idx.write_bytes(lzma.compress(b"\x00\x00\x08\x01\x00\x00\x00\x02\x01\x02")[:-8])
    with pytest.raises(DataFormatError, match=r"labels-idx1-ubyte\.xz: truncated xz file"):
        read_idx(idx)


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_invalid_utf8_names_the_line(tmp_path, suffix):
    raw = (b"3 3 2\n0 0:1\n1 1:1\n") + b"0 2:1 \xe9t\xe9\n"
    path = tmp_path / f"bad.txt{suffix}"
    path.write_bytes(gzip.compress(raw) if suffix else raw)
    with pytest.raises(DataFormatError, match=r"bad\.txt(\.gz)?: line 4, byte 7: not valid utf-8"):
        read_xmc_text(path)
    with pytest.raises(DataFormatError, match=r"line 4, byte 7: not valid utf-8"):
        with open_text(path) as handle:
            handle.read()


def test_text_reader_keeps_line_endings_and_counts_lines(tmp_path):
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"a\r\nb\nc")
    with open_text(path) as handle:
        assert handle.readline() == "a\r\n"
        assert list(handle) == ["b\n", "c"]
        assert handle.line_number == 3
    assert read_ratings(_write_ratings(tmp_path)).rating.tolist() == [3, 5]


def _write_ratings(tmp_path):
    path = tmp_path / "u.data.xz"
    path.write_bytes(lzma.compress(b"1\t2\t3\t881250949\r\n2\t3\t5\t881250950\r\n"))
    return path
