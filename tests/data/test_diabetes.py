"""Diabetes 130-US: the real file's counts, both targets, the grouped encoding, and patient-grouped folds."""
import lzma

import numpy as np
import pytest

from gpflow_ext.data import DataFormatError, diabetes_folds, load_diabetes
from gpflow_ext.data.diabetes import DIABETES_GROUPED_FEATURES, icd9_group, read_ids_mapping


@pytest.fixture(scope="module")
def diabetes_30d(data_dir, missing_dataset):
    path = data_dir / "diabetes-130" / "diabetic_data.csv.xz"
    if not path.is_file():  # the conftest rule: fail under CI, skip elsewhere
        missing_dataset(f"{path} not found")
    return load_diabetes(data_dir, target="readmitted_30d")


def test_real_file_binary_30_day_target(diabetes_30d):
    data = diabetes_30d
    print(f"diabetes grouped encoding: {data.X.shape[1]} features")
    assert data.X.shape == (101766, DIABETES_GROUPED_FEATURES) == (101766, 178)
    assert len(data.feature_names) == data.X.shape[1] and not np.isnan(data.X).any()
    assert data.class_names == ["NO or >30", "<30"]
    np.testing.assert_array_equal(np.bincount(data.y), [90409, 11357])
    assert 1 - data.y.mean() == pytest.approx(0.8884, abs=5e-5)  # the SV-DKL Table 2 DNN accuracy, 0.889
    assert len(np.unique(data.groups)) == 71518
    names = data.feature_names
    assert "encounter_id" not in names and "patient_nbr" not in names and "readmitted" not in names
    for column in ("diag_1", "diag_2", "diag_3"):  # one-hot over the ICD-9 groups: one 1 per row
        block = [i for i, name in enumerate(names) if name.startswith(column + "=")]
        assert 9 <= len(block) <= 10
        np.testing.assert_array_equal(data.X[:, block].sum(axis=1), 1.0)
    assert data.X[:, names.index("age")].min() == 5 and data.X[:, names.index("age")].max() == 95
    assert "admission_type_id=1 (Emergency)" in names  # described from IDs_mapping.csv
    assert not any(name.startswith(("examide=", "citoglipton=")) for name in names)  # constant: dropped
    # first encounter of the file: 2278392, patient 8222157, [0-10), diag_1 250.83, 1 day in hospital
    assert data.groups[0] == 8222157 and data.X[0, names.index("age")] == 5
    assert data.X[0, names.index("diag_1=diabetes")] == 1 and data.X[0, names.index("time_in_hospital")] == 1


def test_real_file_three_classes_and_one_hot(dataset_path):
    data = load_diabetes(dataset_path("diabetes-130"), target="readmitted", encoding="one-hot")
    np.testing.assert_array_equal(np.bincount(data.y), [54864, 35545, 11357])
    assert data.class_names == ["NO", ">30", "<30"]
    assert 54864 / 101766 == pytest.approx(0.5391, abs=5e-5)
    assert data.X.shape == (101766, 2518)


def test_folds_plain_and_patient_grouped(diabetes_30d):
    data = diabetes_30d
    for grouped in (False, True):
        folds = diabetes_folds(data, n_splits=5, grouped=grouped, seed=0)
        tests = np.concatenate([test for _, test in folds])
        np.testing.assert_array_equal(np.sort(tests), np.arange(len(data.y)))  # a partition
        shared = [len(np.intersect1d(data.groups[train], data.groups[test])) for train, test in folds]
        if grouped:
            assert shared == [0] * 5
        else:
            assert min(shared) > 1000  # a random split puts the same patients on both sides
        for _, test in folds:  # stratified: every fold near the 11.16% positive rate
            assert data.y[test].mean() == pytest.approx(11357 / 101766, abs=0.01 if grouped else 0.001)
    again = diabetes_folds(data, grouped=True, seed=0)
    np.testing.assert_array_equal(again[0][1], diabetes_folds(data, grouped=True, seed=0)[0][1])
    with pytest.raises(ValueError, match="n_splits"):
        diabetes_folds(data, n_splits=1)


HEADER = ("encounter_id,patient_nbr,race,gender,age,admission_type_id,discharge_disposition_id,admission_source_id,"
          "time_in_hospital,num_lab_procedures,num_procedures,num_medications,number_outpatient,number_emergency,"
          "number_inpatient,diag_1,diag_2,diag_3,number_diagnoses,insulin,readmitted\n")
ROWS = ["1,10,Caucasian,Female,[0-10),6,25,1,1,41,0,1,0,0,0,250.83,?,?,1,No,NO\n",
        "2,10,Caucasian,Female,[10-20),1,1,7,3,59,0,18,0,0,0,276,250.01,255,9,Up,>30\n",
        "3,11,?,Male,[90-100),1,1,7,2,11,5,13,2,0,1,V57,E909,786,6,No,<30\n"]


def test_small_file_encoding_and_errors(tmp_path):
    folder = tmp_path / "diabetes-130"
    folder.mkdir()
    path = folder / "diabetic_data.csv.xz"
    path.write_bytes(lzma.compress((HEADER + "".join(ROWS)).encode()))
    data = load_diabetes(tmp_path, target="readmitted", min_count=1)
    np.testing.assert_array_equal(data.y, [0, 1, 2])
    np.testing.assert_array_equal(data.groups, [10, 10, 11])
    names = data.feature_names
    assert names[:9] == ["time_in_hospital", "num_lab_procedures", "num_procedures", "num_medications",
                         "number_outpatient", "number_emergency", "number_inpatient", "number_diagnoses", "age"]
    np.testing.assert_array_equal(data.X[:, names.index("age")], [5, 15, 95])
    assert "diag_1=other" in names and data.X[2, names.index("diag_1=other")] == 1  # V57
    assert data.X[2, names.index("diag_2=other")] == 1 and data.X[2, names.index("diag_3=respiratory")] == 1
    assert data.X[1, names.index("diag_3=other")] == 1  # 255: endocrine, not diabetes
    assert "admission_type_id=6" in names  # no IDs_mapping.csv here: codes only
    # with min_count=2 on 3 rows every one-hot column is 1 in < 2 rows (rare) or 0 in < 2 rows (near-constant)
    merged = load_diabetes(tmp_path, target="readmitted", min_count=2)
    assert merged.feature_names == names[:9] and merged.X.shape == (3, 9)
    for text, message in [(HEADER + ROWS[0].replace(",NO\n", ",maybe\n"), "line 2: readmitted must be one of"),
                          (HEADER + ROWS[0].replace(",41,", ",x,"), "line 2: num_lab_procedures must be a whole number"),
                          (HEADER.replace("readmitted", "outcome") + ROWS[0], "columns \\['readmitted'\\] missing"),
                          (HEADER + ROWS[0].replace("250.83", "X12"), "diag_1: not an ICD-9 code")]:
        path.write_bytes(lzma.compress(text.encode()))
        with pytest.raises(DataFormatError, match=message):
            load_diabetes(tmp_path)
    path.write_bytes(lzma.compress((HEADER + "".join(ROWS)).encode())[:-20])
    with pytest.raises(DataFormatError, match="diabetic_data.csv.xz: truncated xz file"):
        load_diabetes(tmp_path)
    with pytest.raises(ValueError, match="target must be one of"):
        load_diabetes(tmp_path, target="readmitted_60d")
    with pytest.raises(ValueError, match="encoding must be one of"):
        load_diabetes(tmp_path, encoding="ordinal")
    with pytest.raises(FileNotFoundError, match="data_dir: diabetic_data.csv"):
        load_diabetes(tmp_path / "nowhere")


def test_icd9_groups_and_ids_mapping(dataset_path):
    cases = {"428": "circulatory", "459.9": "circulatory", "785": "circulatory", "486": "respiratory",
             "786": "respiratory", "535": "digestive", "787": "digestive", "250": "diabetes", "250.83": "diabetes",
             "996": "injury", "800": "injury", "715": "musculoskeletal", "599": "genitourinary", "788": "genitourinary",
             "174": "neoplasms", "239": "neoplasms", "276": "other", "V57": "other", "E909": "other", "?": "?"}
    assert {code: icd9_group(code) for code in cases} == cases
    mapping = read_ids_mapping(dataset_path("diabetes-130", "IDs_mapping.csv"))
    assert mapping["admission_type_id"]["1"] == "Emergency" and len(mapping["discharge_disposition_id"]) == 30
    assert mapping["admission_source_id"]["7"] == "Emergency Room"
