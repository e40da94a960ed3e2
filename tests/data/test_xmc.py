"""Extreme Classification Repository text format, split files, and Mulan ARFF + XML."""
import gzip

import numpy as np
import pytest
import scipy.sparse as sp

from gpflow_ext.data import (
    DataFormatError,
    load_bibtex,
    load_multilabel,
    load_xmc_split,
    read_mulan_arff,
    read_mulan_labels,
    read_xmc_split,
    read_xmc_text,
    write_xmc_text,
)

XML = """<?xml version="1.0" encoding="utf-8"?>
<labels xmlns="http://mulan.sourceforge.net/labels">
<label name="L_a"></label>
<label name="L b"></label>
</labels>
"""
ARFF_SPARSE = """% a comment
@relation tiny
@attribute f0 numeric
@attribute L_a {0,1}
@attribute 'f 1' numeric
@attribute 'L b' {0,1}
@attribute f2 {0,1}

@data
{0 0.5,1 1,4 1}
{2 2.0}
{1 1,3 1}
"""


def _write(path, text):
    path.write_text(text)
    return path


@pytest.fixture
def tiny_xmc(tmp_path):
    # row 1 has no label (starts with a space); row 2 has labels but no features
    return _write(tmp_path / "tiny.txt", "3 4 3\n0,2 0:1 3:2.5\n 1:0.5\n1\n")


def test_xmc_text_reads_labels_features_and_empty_rows(tiny_xmc):
    data = read_xmc_text(tiny_xmc)
    assert isinstance(data.X, sp.csr_matrix) and isinstance(data.Y, sp.csr_matrix)
    np.testing.assert_array_equal(data.X.toarray(), [[1, 0, 0, 2.5], [0, 0.5, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(data.Y.toarray(), [[1, 0, 1], [0, 0, 0], [0, 1, 0]])


def test_xmc_text_empty_line_is_an_empty_row(tmp_path):
    data = read_xmc_text(_write(tmp_path / "blank.txt", "3 2 2\n0 0:1\n\n1 1:1\n\n"))
    np.testing.assert_array_equal(data.Y.toarray(), [[1, 0], [0, 0], [0, 1]])
    np.testing.assert_array_equal(data.X.toarray(), [[1, 0], [0, 0], [0, 1]])


def test_xmc_text_round_trip(tmp_path, rng):
    X = sp.random(30, 20, density=0.2, random_state=1, format="csr")
    X.data = np.round(X.data, 3)
    Y = sp.random(30, 7, density=0.2, random_state=2, format="csr")
    Y.data[:] = 1
    Y = sp.csr_matrix(sp.diags((np.arange(30) != 3).astype(float)) @ Y)  # row 3 without labels
    Y.eliminate_zeros()
    assert Y[3].nnz == 0
    path = tmp_path / "rt.txt.gz"
    write_xmc_text(path, X, Y)
    back = read_xmc_text(path)
    assert (back.X != X).nnz == 0 and (back.Y != Y).nnz == 0


@pytest.mark.parametrize(
    "text, message",
    [
        ("2 4 3\n0 0:1\n", "header says N=2 rows but the file has 1"),
        ("1 4 3\n0 0:1\n1 1:1\n", "header says N=1 rows but the file has more"),
        ("1 4 3\n3 0:1\n", "label index 3 out of range"),
        ("1 4 3\n0 4:1\n", "feature index 4 out of range"),
        ("1 4 3\n0 -1:1\n", "feature index -1 out of range"),
        ("1 4\n0 0:1\n", "header 'N D K'"),
        ("1 4 3\n0 0=1\n", "line 2: cannot parse"),
        ("1 4 3\nx,y 0:1\n", "line 2: cannot parse"),
        ("", "empty file"),
    ],
)
def test_xmc_text_bad_input_names_the_problem(tmp_path, text, message):
    with pytest.raises(DataFormatError, match=message):
        read_xmc_text(_write(tmp_path / "bad.txt", text))


def test_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file.*nope.txt"):
        read_xmc_text(tmp_path / "nope.txt")
    with pytest.raises(FileNotFoundError, match="arff_path"):
        read_mulan_arff(tmp_path / "nope.arff", tmp_path / "nope.xml")


def test_xmc_text_rejects_another_format(dataset_path):
    # an ARFF file is not XMC text
    with pytest.raises(DataFormatError, match="line 1 must be the XMC header"):
        read_xmc_text(dataset_path("bibtex", "bibtex-train.arff.gz"))


def test_split_files_select_rows(tmp_path, tiny_xmc):
    # repository format: one column per split, 1-based row indices
    train = _write(tmp_path / "tiny_trSplit.txt", "1 3\n2 1\n")
    test = _write(tmp_path / "tiny_tstSplit.txt", "3 2\n")
    np.testing.assert_array_equal(read_xmc_split(train), [[0, 2], [1, 0]])
    full = read_xmc_text(tiny_xmc)
    for split, (train_rows, test_rows) in enumerate((([0, 1], [2]), ([2, 0], [1]))):
        train_data, test_data = load_xmc_split(tiny_xmc, train, test, split=split)
        assert (train_data.X != full.X[train_rows]).nnz == 0 and (train_data.Y != full.Y[train_rows]).nnz == 0
        assert (test_data.X != full.X[test_rows]).nnz == 0 and (test_data.Y != full.Y[test_rows]).nnz == 0
    with pytest.raises(ValueError, match="split=2 out of range"):
        load_xmc_split(tiny_xmc, train, test, split=2)
    with pytest.raises(DataFormatError, match="refers to row 4"):
        load_xmc_split(tiny_xmc, _write(tmp_path / "big_trSplit.txt", "4\n"), test)
    with pytest.raises(DataFormatError, match="1-based"):
        read_xmc_split(_write(tmp_path / "zero_trSplit.txt", "0\n"))
    with pytest.raises(DataFormatError, match="columns"):
        read_xmc_split(_write(tmp_path / "ragged_trSplit.txt", "1 2\n3\n"))


def test_mulan_sparse_arff_labels_from_xml(tmp_path):
    xml = _write(tmp_path / "tiny.xml", XML)
    data = read_mulan_arff(_write(tmp_path / "tiny.arff", ARFF_SPARSE), xml)
    assert data.feature_names == ["f0", "f 1", "f2"] and data.label_names == ["L_a", "L b"]
    np.testing.assert_array_equal(data.X.toarray(), [[0.5, 0, 1], [0, 2, 0], [0, 0, 0]])
    np.testing.assert_array_equal(data.Y.toarray(), [[1, 0], [0, 0], [1, 1]])  # row 1: no label, legal
    # the same data written densely gives the same matrices
    dense = ARFF_SPARSE.split("@data")[0] + "@data\n0.5,1,0,0,1\n0,0,2.0,0,0\n0,1,0,1,0\n"
    dense_data = read_mulan_arff(_write(tmp_path / "dense.arff", dense), xml)
    assert (dense_data.X != data.X).nnz == 0 and (dense_data.Y != data.Y).nnz == 0


def test_mulan_bad_input_names_the_problem(tmp_path):
    xml = _write(tmp_path / "tiny.xml", XML)
    header = ARFF_SPARSE.split("@data")[0] + "@data\n"
    cases = [
        (header + "{9 1}\n", "attribute index 9 out of range; the header declares 5"),
        (header + "{1 2}\n", "label attributes must be 0/1"),
        (header + "{0 abc}\n", "cannot parse data row"),
        (header + "1,2\n", "dense row has 2 values but the header declares 5"),
        ("4880 1836 159\n0 1:1\n", "not an ARFF header line"),
        ("@relation r\n", "not an ARFF file"),
    ]
    for text, message in cases:
        with pytest.raises(DataFormatError, match=message):
            read_mulan_arff(_write(tmp_path / "bad.arff", text), xml)
    other_xml = _write(tmp_path / "other.xml", XML.replace("L b", "L_missing"))
    with pytest.raises(DataFormatError, match="absent from the ARFF.*L_missing"):
        read_mulan_arff(_write(tmp_path / "ok.arff", ARFF_SPARSE), other_xml)
    with pytest.raises(DataFormatError, match="not a valid Mulan XML"):
        read_mulan_labels(_write(tmp_path / "broken.xml", "<labels><label name='a'>"))


def test_bibtex_counts_and_arff_equals_xmc_text(dataset_path):
    folder = dataset_path("bibtex")
    arff_train, arff_test = load_bibtex(folder, source="arff", download=False)
    xmc_train, xmc_test = load_bibtex(folder, source="xmc", download=False)
    for arff, xmc, n, mean_labels in ((arff_train, xmc_train, 4880, 2.380), (arff_test, xmc_test, 2515, 2.444)):
        assert arff.X.shape == (n, 1836) and arff.Y.shape == (n, 159)
        assert isinstance(arff.X, sp.csr_matrix) and isinstance(arff.Y, sp.csr_matrix)
        assert (arff.X != xmc.X).nnz == 0 and (arff.Y != xmc.Y).nnz == 0
        assert arff.Y.sum() / n == pytest.approx(mean_labels, abs=5e-4)
        assert set(np.unique(arff.X.data)) == {1.0}
    assert len(arff_train.label_names) == 159 and arff_train.label_names == read_mulan_labels(folder / "bibtex.xml")
    total = arff_train.Y.sum() + arff_test.Y.sum()
    assert total / 7395 == pytest.approx(2.40, abs=5e-3)
    assert (arff_train.X.nnz + arff_test.X.nnz) / 7395 == pytest.approx(68.7, abs=0.05)


def test_bibtex_xmc_header_matches(dataset_path):
    with gzip.open(dataset_path("bibtex", "bibtex_test.xmc.txt.gz"), "rt") as handle:
        assert handle.readline().split() == ["2515", "1836", "159"]


def test_load_multilabel_finds_every_published_layout(tmp_path, tiny_xmc, dataset_path):
    full = read_xmc_text(tiny_xmc)
    # XMC single file + split files (e.g. the repository's Delicious/Mediamill zips), names case-insensitive
    folder = tmp_path / "root" / "mediamill"
    folder.mkdir(parents=True)
    (folder / "Mediamill_data.txt").write_text(tiny_xmc.read_text())
    (folder / "mediamill_trSplit.txt").write_text("1 2\n3 3\n")
    (folder / "mediamill_tstSplit.txt").write_text("2 1\n")
    train, test = load_multilabel("mediamill", tmp_path / "root", split=1)
    assert (train.Y != full.Y[[1, 2]]).nnz == 0 and (test.X != full.X[[0]]).nnz == 0
    # XMC train/test files
    eurlex = tmp_path / "eurlex"
    eurlex.mkdir()
    (eurlex / "eurlex_train.txt").write_text(tiny_xmc.read_text())
    (eurlex / "eurlex_test.txt").write_text("1 4 3\n2 0:1\n")
    train, test = load_multilabel("eurlex", eurlex)
    assert train.X.shape == (3, 4) and test.Y.toarray().tolist() == [[0, 0, 1]]
    # Mulan files (the real bibtex)
    train, test = load_multilabel("bibtex", dataset_path("bibtex").parent)
    assert train.X.shape == (4880, 1836) and test.Y.shape == (2515, 159)
    with pytest.raises(FileNotFoundError, match="multi-label dataset 'delicious'.*delicious-train.arff"):
        load_multilabel("delicious", tmp_path)
