"""Mulan ARFF + XML as published: ARFF name quoting and escapes, CRLF, comments, and misspelt XML labels."""
import gzip
import warnings

import numpy as np
import pytest

from gpflow_ext.data import DataFormatError, load_multilabel, read_mulan_arff
from gpflow_ext.data._io import DataFormatWarning

# Mulan Delicious (delicious.rar, 2011): 500 word features then 983 labels. Its delicious.xml names one
# label TTAG_m\'usica (an extra T, backslash kept) where the ARFF declares @attribute TAG_m\'usica {0,1}.
DELICIOUS_LABELS = ["TAG_.imported", "TAG_m\\'usica", "TAG_music", "TAG_zzzz"]  # as written in the ARFF
XML_NAMES = ["TAG_.imported", "TTAG_m\\'usica", "TAG_music", "TAG_zzzz"]  # as written in delicious.xml


def _delicious_arff(rows, line_end="\n"):
    lines = ["@relation 'delicious: -C -983'", ""]
    lines += [f"@attribute word{j} {{0,1}}" for j in range(3)]
    lines += [f"@attribute {name} {{0,1}}" for name in DELICIOUS_LABELS]
    lines += ["", "@data"] + rows
    return line_end.join(lines) + line_end


def _xml(names):
    body = "".join(f'<label name="{name}"></label>\n' for name in names)
    return f'<?xml version="1.0" encoding="utf-8"?>\n<labels xmlns="http://mulan.sourceforge.net/labels">\n{body}</labels>\n'


ROWS = ["{0 1,2 1,4 1}", "{1 1,3 1,6 1}", "{}"]  # row 2: no feature, no label
EXPECTED_X = [[1, 0, 1], [0, 1, 0], [0, 0, 0]]
EXPECTED_Y = [[0, 1, 0, 0], [1, 0, 0, 1], [0, 0, 0, 0]]


def test_delicious_misspelt_label_is_taken_by_position_with_a_warning(tmp_path):
    arff = tmp_path / "delicious-train.arff"
    arff.write_text(_delicious_arff(ROWS))
    xml = tmp_path / "delicious.xml"
    xml.write_text(_xml(XML_NAMES))
    with pytest.warns(DataFormatWarning) as record:
        data = read_mulan_arff(arff, xml)
    assert len(record) == 1  # one mismatch, one warning naming both spellings
    message = str(record[0].message)
    assert "TTAG_m\\'usica" in message and "TAG_m'usica" in message and "the last 4 attributes" in message
    # counts and label order as published (ARFF order; the name is the ARFF's, unescaped)
    assert data.X.shape == (3, 3) and data.Y.shape == (3, 4)
    assert data.feature_names == ["word0", "word1", "word2"]
    assert data.label_names == ["TAG_.imported", "TAG_m'usica", "TAG_music", "TAG_zzzz"]
    np.testing.assert_array_equal(data.X.toarray(), EXPECTED_X)
    np.testing.assert_array_equal(data.Y.toarray(), EXPECTED_Y)


def test_delicious_layout_through_load_multilabel(tmp_path):
    folder = tmp_path / "delicious"
    folder.mkdir()
    with gzip.open(folder / "delicious-train.arff.gz", "wt") as handle:
        handle.write(_delicious_arff(ROWS, "\r\n"))
    (folder / "delicious-test.arff").write_text(_delicious_arff(ROWS[:1]))
    (folder / "delicious.xml").write_text(_xml(XML_NAMES))
    with pytest.warns(DataFormatWarning, match="TTAG_m"):
        train, test = load_multilabel("delicious", tmp_path)
    assert train.num_data == 3 and test.num_data == 1 and train.num_labels == test.num_labels == 4
    np.testing.assert_array_equal(train.Y.toarray(), EXPECTED_Y)


def test_xml_copying_the_escape_or_unescaped_matches_without_warning(tmp_path):
    arff = tmp_path / "d.arff"
    arff.write_text(_delicious_arff(ROWS))
    for names in (DELICIOUS_LABELS, [name.replace("\\'", "'") for name in DELICIOUS_LABELS]):
        xml = tmp_path / "d.xml"
        xml.write_text(_xml(names))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            data = read_mulan_arff(arff, xml)
        assert data.label_names[1] == "TAG_m'usica"
        np.testing.assert_array_equal(data.Y.toarray(), EXPECTED_Y)


def test_labels_at_the_start_by_position(tmp_path):
    text = "\n".join([
        "@relation r", "@attribute lab0 {0,1}", "@attribute lab1 {0,1}", "@attribute x0 numeric", "@attribute x1 numeric",
        "@data", "1,0,0.5,2", "0,1,1.5,0",
    ]) + "\n"
    arff = tmp_path / "s.arff"
    arff.write_text(text)
    xml = tmp_path / "s.xml"
    xml.write_text(_xml(["lab0", "labOne"]))
    with pytest.warns(DataFormatWarning, match="'labOne'.*the first 2 attributes.*'lab1'"):
        data = read_mulan_arff(arff, xml)
    assert data.label_names == ["lab0", "lab1"] and data.feature_names == ["x0", "x1"]
    np.testing.assert_array_equal(data.Y.toarray(), [[1, 0], [0, 1]])
    np.testing.assert_array_equal(data.X.toarray(), [[0.5, 2], [1.5, 0]])


@pytest.mark.parametrize("names, why", [
    (["TAG_.imported", "TAG_music", "TTAG_m\\'usica", "TAG_zzzz"], "matching names out of place"),
    (["TTAG_x", "TTAG_y", "TTAG_z", "TTAG_w"], "no name matches"),
    (["TAG_music", "TTAG_m\\'usica", "TAG_zzzz"], "3 labels: the last 3 attributes do not fit"),
])
def test_positional_rule_refuses_what_does_not_fit(tmp_path, names, why):
    arff = tmp_path / "d.arff"
    arff.write_text(_delicious_arff(ROWS))
    xml = tmp_path / "d.xml"
    xml.write_text(_xml(names))
    with pytest.raises(DataFormatError, match="absent from the ARFF attributes"):
        read_mulan_arff(arff, xml)


def test_positional_rule_needs_a_binary_attribute_in_place(tmp_path):
    text = "@relation r\n@attribute x numeric\n@attribute a {0,1}\n@attribute b numeric\n@data\n1,0,2\n"
    arff = tmp_path / "n.arff"
    arff.write_text(text)
    xml = tmp_path / "n.xml"
    xml.write_text(_xml(["a", "bee"]))  # 'b' is numeric, so it is not a label attribute
    with pytest.raises(DataFormatError, match="'bee'"):
        read_mulan_arff(arff, xml)


def test_quoted_and_escaped_names_crlf_and_comments(tmp_path):
    lines = [
        "% Mulan-style comment", "@RELATION 'quirks: -C 2'", "% another comment",
        "@attribute 'word with spaces' numeric",
        '@attribute "double quoted" numeric',
        "@attribute 'it\\'s' numeric",
        "@attribute tab\\tname REAL",
        "@attribute 'label one' {0,1}",
        '@attribute "label \\"two\\"" {0, 1}',
        "", "@data", "% comment between rows",
        "1,2,3,4,1,0", "{1 5,5 1}", "0,0,0,0,0,0",
    ]
    arff = tmp_path / "q.arff"
    arff.write_bytes("\r\n".join(lines).encode() + b"\r\n")
    xml = tmp_path / "q.xml"
    xml.write_text(_xml(["label one", "label &quot;two&quot;"]))
    data = read_mulan_arff(arff, xml)
    assert data.feature_names == ["word with spaces", "double quoted", "it's", "tab\tname"]
    assert data.label_names == ["label one", 'label "two"']
    np.testing.assert_array_equal(data.X.toarray(), [[1, 2, 3, 4], [0, 5, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(data.Y.toarray(), [[1, 0], [0, 1], [0, 0]])
