"""Result files: provenance in every file, portable paths, the curated stores and the generated pages."""
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpflow_ext import config
from gpflow_ext.results import PROVENANCE_KEYS, portable, provenance, read_results, write_results

REPO = Path(__file__).resolve().parent.parent
STORES = sorted(p for p in (REPO / "docs").glob("*/results") if p.is_dir())
MACHINE_PATH = re.compile(r"/(work|tmp|home|root|Users|opt|mnt|var)/[A-Za-z0-9_.-]+")


def test_provenance_has_every_key_and_this_commit():
    record = provenance(seeds=[3, 4])
    assert set(PROVENANCE_KEYS) <= set(record)
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    if head:  # a git checkout (the sdist has none)
        assert record["git_commit"] == head
        assert isinstance(record["git_dirty"], bool)
    assert record["seeds"] == [3, 4]
    assert record["cpu_cores"] >= 1 and record["wall_seconds"] > 0
    assert record["versions"]["numpy"] == np.__version__


def test_write_results_adds_provenance_and_makes_paths_portable(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv(config.DATA_ENV, str(data))
    monkeypatch.chdir(tmp_path)
    out = write_results({"p1": np.float32(64.5), "rows": np.arange(3), "file": str(data / "bibtex" / "x.arff"),
                         "home": str(Path.home() / "runs")}, tmp_path / "out" / "r.json", seeds=[1])
    record = read_results(out)
    assert record["p1"] == pytest.approx(64.5) and record["rows"] == [0, 1, 2]
    assert record["file"] == "$GPFLOW_EXT_DATA/bibtex/x.arff"
    assert record["home"] == "~/runs"
    assert record["provenance"]["seeds"] == [1]
    assert not MACHINE_PATH.search(json.dumps(record["provenance"]["command"]).replace(str(tmp_path), ""))


def test_write_results_appends_records_and_refuses_bad_input(tmp_path):
    path = tmp_path / "sweep.jsonl"
    write_results({"a": 1}, path, jsonl=True)
    write_results({"a": 2}, path, jsonl=True)
    assert [r["a"] for r in read_results(path)] == [1, 2]
    with pytest.raises(TypeError, match="results must be a mapping"):
        write_results([1, 2], tmp_path / "x.json")
    with pytest.raises(ValueError, match="provenance"):
        write_results({"provenance": {}}, tmp_path / "x.json")
    assert write_results({"a": 1}, None) is None


def test_portable_walks_containers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    value = portable({"a": [str(tmp_path / "x.json"), ("y", tmp_path / "z")], "n": 3})
    assert value == {"a": ["./x.json", ["y", "./z"]], "n": 3}


def _store_files(store: Path):
    return sorted(p for p in store.rglob("*") if p.is_file() and p.name != "README.md")


def _index_names(index: Path):
    return set(re.findall(r"^\|\s*`([^`]+)`", index.read_text(encoding="utf-8"), re.M))


@pytest.mark.parametrize("store", STORES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_stored_file_is_indexed_with_provenance_and_no_machine_path(store):
    unlisted, missing_provenance, machine_paths = [], [], []
    for path in _store_files(store):
        folder = path.parent
        while not (folder / "README.md").exists() and folder != store:
            folder = folder.parent
        index = folder / "README.md"
        if not index.exists() or path.relative_to(folder).as_posix() not in _index_names(index):
            unlisted.append(path.relative_to(store).as_posix())
        if path.suffix in (".json", ".jsonl"):
            text = path.read_text(encoding="utf-8")
            if MACHINE_PATH.search(text):
                machine_paths.append(path.relative_to(store).as_posix())
            records = read_results(path)
            for record in records if isinstance(records, list) else [records]:
                keys = set((record.get("provenance") or {}) if isinstance(record, dict) else ())
                if not set(PROVENANCE_KEYS) <= keys:
                    missing_provenance.append(path.relative_to(store).as_posix())
                    break
    assert not unlisted, f"files in {store.relative_to(REPO)} not named in its README.md index: {unlisted}"
    assert not missing_provenance, f"result files without a full provenance record: {missing_provenance}"
    assert not machine_paths, f"result files with a machine path: {machine_paths}"


@pytest.mark.parametrize("store", STORES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_indexed_file_exists(store):
    for index in store.rglob("README.md"):
        missing = [n for n in _index_names(index) if not (index.parent / n).exists()]
        assert not missing, f"{index.relative_to(REPO)} names files that are not there: {missing}"


def test_pages_are_what_the_result_files_give():
    """Every generated part of README.md and docs/ regenerates to the committed text, and no page carries a
    number outside generated parts and code."""
    done = subprocess.run([sys.executable, "-m", "experiments.report", "--check"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]


def test_result_files_live_only_in_the_stores():
    loose = [p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*")
             if p.suffix in (".json", ".jsonl", ".txt", ".log", ".csv") and "results" not in p.relative_to(REPO).parts[:-1]]
    assert not loose, f"result files outside docs/<paper>/results/: {loose}"
