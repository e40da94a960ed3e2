"""Diabetes 130-US / Covertype readers on small files in the published formats."""
import gzip

import numpy as np
import pytest

from gpflow_ext.data.uci_extra import load_covtype, load_diabetes, read_covtype, read_diabetes

DIABETES_HEADER = (
    "encounter_id,patient_nbr,race,gender,age,admission_type_id,time_in_hospital,num_medications,"
    "diag_1,insulin,readmitted\n"
)
DIABETES_ROWS = [
    "2278392,8222157,Caucasian,Female,[0-10),6,1,1,250.83,No,NO\n",
    "149190,55629189,Caucasian,Female,[10-20),1,3,18,276,Up,>30\n",
    "64410,86047875,AfricanAmerican,Female,[20-30),1,2,13,648,No,<30\n",
    "500364,82442376,?,Male,[30-40),1,2,16,8,Up,NO\n",
]


@pytest.mark.parametrize("compressed", [False, True])
def test_read_diabetes(tmp_path, compressed):
    text = DIABETES_HEADER + "".join(DIABETES_ROWS)
    path = tmp_path / ("diabetic_data.csv.gz" if compressed else "diabetic_data.csv")
    if compressed:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    data = load_diabetes(tmp_path) if compressed else read_diabetes(path)
    np.testing.assert_array_equal(data.y, [0, 1, 2, 0])
    names = data.feature_names
    assert "encounter_id" not in names and "race=?" in names and "admission_type_id=6" in names
    assert data.X.shape == (4, len(names))
    np.testing.assert_array_equal(data.X[:, names.index("num_medications")], [1, 18, 13, 16])
    assert data.X[3, names.index("race=?")] == 1


def test_read_diabetes_bad_target(tmp_path):
    path = tmp_path / "diabetic_data.csv"
    path.write_text(DIABETES_HEADER + DIABETES_ROWS[0].replace(",NO\n", ",maybe\n"))
    with pytest.raises(ValueError, match="readmitted"):
        read_diabetes(path)


def test_read_covtype(tmp_path):
    rows = np.zeros((3, 55), dtype=int)
    rows[:, 0] = [2596, 2590, 2804]
    rows[:, -1] = [5, 2, 7]
    path = tmp_path / "covtype.data.gz"
    with gzip.open(path, "wt") as f:
        f.write("\n".join(",".join(map(str, r)) for r in rows) + "\n")
    data = load_covtype(tmp_path)
    np.testing.assert_array_equal(data.y, [4, 1, 6])
    assert data.X.shape == (3, 54) and data.X[2, 0] == 2804
    (tmp_path / "bad.csv").write_text("1,2,3\n")
    with pytest.raises(ValueError, match="55"):
        read_covtype(tmp_path / "bad.csv")
    with pytest.raises(FileNotFoundError):
        load_covtype(tmp_path / "nowhere")
