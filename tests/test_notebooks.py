"""The three paper notebooks: each .ipynb is its jupytext pairing of the percent-format .py (the tests of each
paper execute the notebooks: tests/test_mlgpf_experiments.py, test_svdkl_experiments.py, test_gplvf_experiments.py)."""
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = ("mlgpf_bibtex", "svdkl", "gplvf")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_matches_its_percent_script(name):
    jupytext = pytest.importorskip("jupytext")
    nbformat = pytest.importorskip("nbformat")

    script = REPO / "notebooks" / f"{name}.py"
    assert script.read_text(encoding="utf-8").splitlines()[:4] == ["# ---", "# jupyter:", "#   jupytext:",
                                                                   "#     formats: ipynb,py:percent"]
    from_script = jupytext.read(script)
    notebook = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
    assert [(c.cell_type, c.source) for c in notebook.cells] == [(c.cell_type, c.source) for c in from_script.cells], (
        f"notebooks/{name}.ipynb differs from notebooks/{name}.py: run `jupytext --sync notebooks/{name}.py`")
    assert notebook.metadata["jupytext"]["formats"] == "ipynb,py:percent"
    assert not any(c.get("outputs") for c in notebook.cells if c.cell_type == "code"), "commit notebooks without outputs"
    assert "import matplotlib.pyplot as plt" in script.read_text(encoding="utf-8")
