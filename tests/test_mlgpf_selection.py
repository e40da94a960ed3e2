"""Choosing MLGPF settings on the training file (K folds, a validation split) and paired comparisons with peers."""
import json
import shutil

import numpy as np
import pytest
import scipy.sparse as sp

from gpflow_ext.recipes.mlgpf_candidates import candidate_config, parse_candidate, parse_grid
from gpflow_ext.recipes.mlgpf_select import choose, kfold_splits, select, validation_splits
from gpflow_ext.recipes.xmc_baselines import (
    bootstrap_interval,
    decode_rows,
    encode_rows,
    paired_comparison,
    row_hits,
)


# -- splits and candidates ------------------------------------------------------------------------
def test_kfold_splits_partition_the_training_rows():
    splits = kfold_splits(23, folds=5, seed=3)
    held = np.concatenate([h for _, h in splits])
    assert len(splits) == 5 and sorted(held.tolist()) == list(range(23))  # every row held out exactly once
    for fit, h in splits:
        assert not set(fit) & set(h) and len(fit) + len(h) == 23
    again = kfold_splits(23, folds=5, seed=3)
    assert all((a[1] == b[1]).all() for a, b in zip(splits, again))  # seeded
    assert any((a[1] != b[1]).any() for a, b in zip(splits, kfold_splits(23, folds=5, seed=4)))
    assert splits[0][1].tolist() != list(range(len(splits[0][1])))  # shuffled
    with pytest.raises(ValueError):
        kfold_splits(3, folds=5)


def test_validation_split_holds_out_a_seeded_fraction():
    [(fit, held)] = validation_splits(50, 0.2, seed=1)
    assert len(held) == 10 and len(fit) == 40 and not set(fit) & set(held)
    assert (validation_splits(50, 0.2, seed=1)[0][1] == held).all()
    with pytest.raises(ValueError):
        validation_splits(50, 1.5)


def test_grid_and_candidates_parse_any_config_field():
    grid = parse_grid(["prior_variance=8,12", "epochs=3,4"])
    assert grid == [{"kernel_variance": 8.0, "epochs": 3}, {"kernel_variance": 8.0, "epochs": 4},
                    {"kernel_variance": 12.0, "epochs": 3}, {"kernel_variance": 12.0, "epochs": 4}]
    assert parse_candidate("recipe=tfidf,float32=false,kernel_variance=none") == {
        "recipe": "tfidf", "float32": False, "kernel_variance": None}
    assert parse_candidate("") == {}
    for bad in (["nonsense=1"], ["epochs"], ["input_transform=x"]):
        with pytest.raises(ValueError):
            parse_grid(bad)
    config = candidate_config("label-gps", "s-linear", "bibtex", {"kernel_variance": 20.0}, base={"epochs": 7})
    assert config.kernel_variance == 20.0 and config.epochs == 7 and config.independent_labels
    assert not candidate_config("label-gps", "s-linear", "bibtex", {"recipe": "paper"}).independent_labels


def test_choice_rule_highest_mean_with_a_tie_margin():
    rows = [{"name": n, "overrides": {}, "P@1 mean": m} for n, m in (("a", 63.59), ("b", 63.79), ("c", 63.63))]
    exact = choose(rows, margin=0.0)
    assert exact["chosen"] == "b" and exact["ties"] == ["b"] and exact["gap_to_runner_up"] == pytest.approx(0.16)
    wide = choose(rows, margin=0.3)  # all within 0.3 of the best: tied, the first listed is chosen
    assert wide["best"] == "b" and wide["ties"] == ["a", "b", "c"] and wide["chosen"] == "a"
    assert "0.3" in wide["rule"] and "highest mean P@1" in wide["rule"]
    assert choose([{"name": "x", "overrides": {}, "P@1 mean": 1.0}] * 2)["chosen"] == "x"


def test_select_trains_only_on_training_rows_and_tabulates_each_split():
    X = sp.random(40, 6, density=0.5, format="csr", random_state=0)
    Y = sp.csr_matrix((np.arange(40) % 3 == 0).astype(float)[:, None])
    seen = []

    def fake_run(config, train, held_out, progress=False):
        seen.append((train[0].shape[0], held_out[0].shape[0], config.kernel_variance, config.eval_every))
        return {"P@1": config.kernel_variance + held_out[0].shape[0], "P@3": 0.0, "P@5": 0.0}

    partial = []
    out = select(X, Y, parse_grid(["kernel_variance=1,3"]), kfold_splits(40, 4, seed=0), recipe="label-gps",
                 base={"epochs": 5}, run=fake_run, progress=partial.append)
    assert seen == [(30, 10, 1.0, 5), (30, 10, 3.0, 5)] * 4  # split by split; scored once, after the last epoch
    first, second = out["candidates"]
    assert [s["P@1"] for s in first["splits"]] == [11.0] * 4 and first["P@1 sd"] == 0.0
    assert second["P@1 mean"] == 13.0 and out["complete"] and out["selection"]["chosen"] == "kernel_variance=3"
    assert len(partial) == 8 and not partial[0]["complete"] and partial[0]["selection"] is None
    # a stopped run resumes: the fits in the partial outcome are reused, only the rest are refitted
    seen.clear()
    resumed = select(X, Y, parse_grid(["kernel_variance=1,3,5"]), kfold_splits(40, 4, seed=0), recipe="label-gps",
                     base={"epochs": 5}, run=fake_run, previous=partial[2])
    assert seen == [(30, 10, v, 5) for v in (5.0, 3.0, 5.0)] + [(30, 10, v, 5) for v in (1.0, 3.0, 5.0)] * 2
    assert resumed["candidates"][0]["splits"][0] == partial[2]["candidates"][0]["splits"][0]
    assert resumed["selection"]["chosen"] == "kernel_variance=5"


def test_select_on_a_small_problem_beats_label_frequency():
    """Real fits (label-gps on a generated problem): the chosen candidate's cross-validated P@1 is above the
    held-out P@1 of ranking labels by their training frequency, computed here on the same folds."""
    from gpflow_ext.recipes.mlgpf import synthetic_multilabel

    (X, Y), _ = synthetic_multilabel(num_rows=400, num_features=60, num_labels=12, seed=0)
    splits = kfold_splits(X.shape[0], 2, seed=0)
    out = select(X, Y, parse_grid(["kernel_variance=4,16"]), splits, recipe="label-gps",
                 base={"epochs": 15, "rank": 40, "batch_size": 100})
    frequency = []
    for fit, held in splits:
        top = np.argmax(np.asarray(Y[fit].sum(axis=0)).ravel())
        frequency.append(100.0 * float(Y[held][:, top].mean()))
    chosen = next(c for c in out["candidates"] if c["name"] == out["selection"]["chosen"])
    assert chosen["P@1 mean"] > np.mean(frequency) + 10.0, (chosen["P@1 mean"], frequency)


# -- per-row outcomes and the paired comparison ---------------------------------------------------------------
def test_encoded_rows_round_trip_and_hits_count_true_labels():
    top = np.array([[2, 0, -1], [1, 2, 0]])
    assert (decode_rows(encode_rows(top)) == top).all()
    Y = sp.csr_matrix(np.array([[1, 0, 1], [0, 0, 1]]))
    assert row_hits(top, Y, 1).tolist() == [1, 0] and row_hits(top, Y, 3).tolist() == [2, 1]  # -1 is a miss


@pytest.mark.parametrize("high, dtype", [(100, "i1"), (200, "i2"), (40_000, "i4"), (2**40, "i8")])
def test_encoded_rows_are_compact_and_lossless(high, dtype):
    top = np.random.default_rng(0).integers(-1, high, size=(257, 5))  # [N, k], -1: no prediction
    top[0, 0] = high - 1
    text = encode_rows(top)
    assert text.startswith(f"zlib:257x5:{dtype}:") and text.isascii()
    decoded = decode_rows(text)
    assert decoded.dtype == np.int64 and decoded.shape == (257, 5) and (decoded == top).all()
    assert (decode_rows(encode_rows(np.zeros((0, 5), dtype=int))) == np.zeros((0, 5))).all()
    with pytest.raises(ValueError, match="shape 258x5"):
        decode_rows(text.replace("zlib:257x5", "zlib:258x5"))


def test_earlier_text_form_of_rows_still_decodes():
    """Result files written before the compact form keep rows as text: ``;`` between rows, ``,`` between ids."""
    top = np.array([[2, 0, -1], [1, 2, 0]])
    legacy = ";".join(",".join(map(str, row)) for row in top.tolist())
    assert (decode_rows(legacy) == top).all() and (decode_rows(legacy) == decode_rows(encode_rows(top))).all()
    with pytest.raises(ValueError, match="different lengths"):
        decode_rows("1,2;3")


def test_paired_comparison_counts_ties_as_ties_and_intervals_cover_zero_without_difference():
    rng = np.random.default_rng(0)
    base = rng.integers(0, 2, size=300)
    shuffled = base.copy()
    rng.shuffle(shuffled)  # the same P@1, other rows: a tie, however different the rows
    same = paired_comparison([base], [shuffled], k=1, resamples=500)
    assert (same["wins"], same["ties"], same["losses"]) == (0, 1, 0) and same["mean_difference"] == 0.0
    assert same["interval_covers_zero"]
    better = np.maximum(base, rng.integers(0, 2, size=300))  # hits wherever base hits, and more
    out = paired_comparison([better, better], [base, shuffled, base], k=1, resamples=500, seed=1)
    assert (out["wins"], out["ties"], out["losses"]) == (6, 0, 0) and len(out["pairs"]) == 6
    expected = 100.0 * (better.mean() - (2 * base.mean() + shuffled.mean()) / 3)
    assert out["mean_difference"] == pytest.approx(expected)
    assert 0.0 < out["interval"][0] < out["mean_difference"] < out["interval"][1]
    assert paired_comparison([better], [base], resamples=500, seed=1)["interval"] == \
        paired_comparison([better], [base], resamples=500, seed=1)["interval"]  # seeded
    low, high = bootstrap_interval(np.ones(10), resamples=100)
    assert low == high == 1.0


# -- the commands, on small cases -----------------------------------------------------------------------------
@pytest.fixture
def training_file_only(dataset_path, tmp_path):
    """A data folder with Bibtex's training file and label list, and a test file that is garbage (a command
    that opens the test split fails)."""
    folder = tmp_path / "data" / "bibtex"
    folder.mkdir(parents=True)
    for name in ("bibtex-train.arff.gz", "bibtex.xml"):
        shutil.copy(dataset_path("bibtex", name), folder / name)
    (folder / "bibtex-test.arff").write_text("not an ARFF file\n")
    return folder.parent


def test_select_command_reads_only_the_training_file(run_python, training_file_only, tmp_path):
    """The training file and the label list copied to a folder whose test file is garbage: the command works,
    so it never opens the test split."""
    output = tmp_path / "cv.json"
    run_python("-m", "experiments.mlgpf_select", "--data-dir", training_file_only, "--dataset", "bibtex", "--smoke",
               "--max-rows", "150", "--folds", "3", "--grid", "prior_variance=8,16", "--margin", "0.5",
               "--output", output)
    result = json.loads(output.read_text())
    assert result["split"] == "train" and result["n_train_rows"] == 150 and result["scheme"]["folds"] == 3
    assert [c["name"] for c in result["candidates"]] == ["kernel_variance=8", "kernel_variance=16"]
    for candidate in result["candidates"]:
        assert [s["n_held_out"] for s in candidate["splits"]] == [50, 50, 50]
        p1 = [s["P@1"] for s in candidate["splits"]]
        assert candidate["P@1 mean"] == pytest.approx(np.mean(p1))
        assert candidate["P@1 sd"] == pytest.approx(np.std(p1, ddof=1))
    selection = result["selection"]
    assert selection["margin"] == 0.5 and "0.5 points" in selection["rule"]
    assert selection["chosen"] == selection["ties"][0] and "provenance" in result


def test_validation_split_command_with_candidate_configs(run_python, dataset_path, data_dir, tmp_path):
    dataset_path("bibtex", "bibtex-train.arff.gz")
    output = tmp_path / "ablation.json"
    run_python("-m", "experiments.mlgpf_select", "--data-dir", data_dir, "--dataset", "bibtex", "--smoke",
               "--validation-fraction", "0.25", "--candidate", "", "--candidate", "kernel_variance=none",
               "--output", output)
    result = json.loads(output.read_text())
    assert result["scheme"] == {"kind": "validation split", "fraction": 0.25, "seed": 0}
    names = [c["name"] for c in result["candidates"]]
    assert names == ["recipe defaults", "kernel_variance=None"]
    assert result["candidates"][1]["config"]["kernel_variance"] is None
    assert all(len(c["splits"]) == 1 and c["splits"][0]["n_held_out"] == 75 for c in result["candidates"])


def test_paired_command_stores_each_run_and_its_rows(run_python, dataset_path, data_dir, tmp_path):
    dataset_path("bibtex", "bibtex-train.arff.gz")
    env = {"GPFLOW_EXT_DATA": str(data_dir)}
    runs = []
    for seed in (0, 1):
        runs.append(tmp_path / f"recipe-{seed}.json")
        run_python("-m", "experiments.mlgpf_xmc", "--dataset", "bibtex", "--recipe", "best", "--smoke",
                   "--seed", seed, "--epochs", "3", "--save-rows", "--no-progress", "--output", runs[-1], env=env)
    peers = tmp_path / "peers.json"
    run_python("-m", "experiments.xmc_baselines", "--dataset", "bibtex", "--methods", "ovr", "--max-rows", "400",
               "--save-rows", "--output", peers, env=env)
    output = tmp_path / "paired.json"
    run_python("-m", "experiments.xmc_paired", "--dataset", "bibtex", "--max-rows", "400", "--runs", *runs,
               "--peers", peers, "--min-peer-runs", "1", "--resamples", "300", "--output", output, env=env)
    result = json.loads(output.read_text())
    recipe, peer = result["methods"]["recipe best"], result["methods"]["sklearn-ovr-logreg(C=10)"]
    assert [r["seed"] for r in recipe["runs"]] == [0, 1] and len(peer["runs"]) == 1
    for method, source in ((recipe, runs[0]), (peer, peers)):
        stored = json.loads(source.read_text())
        stored = stored if "top" in stored else stored["results"][0]
        run = method["runs"][0]
        assert len(run["hits@1"]) == 400 and set(run["hits@1"]) <= {"0", "1"}
        assert run["P@1"] == pytest.approx(100.0 * sum(map(int, run["hits@1"])) / 400) == pytest.approx(stored["P@1"])
        assert run["P@5"] == pytest.approx(stored["P@5"])
    comparison = result["comparisons"][0]["P@1"]
    assert comparison["wins"] + comparison["ties"] + comparison["losses"] == 2
    a = np.array([[int(c) for c in r["hits@1"]] for r in recipe["runs"]]).mean(axis=0)
    b = np.array([int(c) for c in peer["runs"][0]["hits@1"]])
    assert comparison["mean_difference"] == pytest.approx(100.0 * (a - b).mean())  # recomputable from the rows
    assert comparison["interval"][0] <= comparison["mean_difference"] <= comparison["interval"][1]


def test_peers_need_the_peers_interpreter_variable(run_python, dataset_path, data_dir):
    dataset_path("bibtex", "bibtex-train.arff.gz")
    completed = run_python("-m", "experiments.xmc_baselines", "--data-dir", data_dir, "--smoke", "--methods",
                           "omikuji", env={"GPFLOW_EXT_PEERS_PYTHON": ""}, check=False)
    assert completed.returncode != 0 and "GPFLOW_EXT_PEERS_PYTHON" in completed.stderr


def test_self_tuning_candidate_reads_only_the_training_file(run_python, training_file_only, tmp_path):
    """label-gps-auto chooses σ² inside each fold's fit rows; with a garbage test file beside the training file
    the command still works, and each split records the grid, the rule and the choice."""
    output = tmp_path / "cv.json"
    run_python("-m", "experiments.mlgpf_select", "--data-dir", training_file_only, "--dataset", "bibtex", "--smoke",
               "--max-rows", "120", "--folds", "2", "--candidate", "kernel_variance=12",
               "--candidate", "recipe=label-gps-auto", "--output", output)
    result = json.loads(output.read_text())
    fixed, auto = result["candidates"]
    assert auto["config"]["kernel_variance_grid"] == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]
    for split in auto["splits"]:
        tuning = split["tuning"]
        assert tuning["chosen"] in tuning["grid"] and tuning["folds"] == 3 and split["n_fit"] == 60
        assert set(auto["config"]["kernel_variance_grid"]) <= set(tuning["grid"])  # and any values added past an end
        assert len(tuning["scores"]) == len(tuning["grid"]) <= 10 + auto["config"]["tuning_extensions"]
        expected = {min(tuning["grid"]): "lowest", max(tuning["grid"]): "highest"}.get(tuning["chosen"])
        assert tuning["at_end"] == expected
    assert "tuning" not in fixed["splits"][0]


RESUME_STOPPED = """
import json, sys
import experiments.mlgpf_select as script
output, data, stop_in = sys.argv[1], sys.argv[2], sys.argv[3]
args = ["--data-dir", data, "--dataset", "medical", "bibtex", "--smoke", "--max-rows", "60", "--folds", "2",
        "--candidate", "kernel_variance=12", "--output", output]
script.main(args)
first = json.load(open(output))
select = script.select

def stopped(*positional, progress, **keywords):
    def once(partial):
        progress(partial)
        if keywords["dataset"] == stop_in:  # stopped after the first fit on this dataset
            raise KeyboardInterrupt
    return select(*positional, progress=once, **keywords)

script.select = stopped
try:
    script.main(args + ["--resume", "--candidate", "kernel_variance=4"])
except KeyboardInterrupt:
    pass
print(json.dumps({"first": first, "kept": json.load(open(output))}))
"""


def test_a_resumed_run_stopped_early_keeps_the_datasets_it_had_not_reached(run_python, dataset_path, data_dir,
                                                                            tmp_path):
    """A run over several datasets resumed with a new candidate and stopped after its first fit: the output still
    holds every dataset's earlier fits; an output holding a dataset not asked for is refused before any fit."""
    dataset_path("bibtex", "bibtex-train.arff.gz")
    dataset_path("medical", "medical-train.arff.gz")
    output = tmp_path / "cv.json"
    result = json.loads(run_python("-c", RESUME_STOPPED, output, data_dir, "medical").stdout.splitlines()[-1])
    first, kept = result["first"], result["kept"]
    assert kept["datasets"]["bibtex"] == first["datasets"]["bibtex"]
    medical = {c["name"]: c for c in kept["datasets"]["medical"]["candidates"]}
    assert medical["kernel_variance=12"]["splits"][0] == first["datasets"]["medical"]["candidates"][0]["splits"][0]
    assert medical["kernel_variance=4"]["splits"] == [] and kept["datasets"]["medical"]["complete"] is False
    refused = run_python("-m", "experiments.mlgpf_select", "--data-dir", data_dir, "--dataset", "medical", "enron",
                         "--smoke", "--candidate", "kernel_variance=12", "--resume", "--output", output, check=False)
    assert refused.returncode == 2 and "also holds bibtex" in refused.stderr
    assert json.loads(output.read_text()) == kept
    # a file over several datasets given to --reuse: its fits are taken, none is made again
    again = tmp_path / "again.json"
    reused = run_python("-m", "experiments.mlgpf_select", "--data-dir", data_dir, "--dataset", "bibtex", "medical",
                        "--smoke", "--max-rows", "60", "--folds", "2", "--candidate", "kernel_variance=12",
                        "--reuse", output, "--output", again)
    assert reused.stdout.count("(reused)") == 3  # bibtex's two splits and medical's first; medical's second is fitted
    datasets = json.loads(again.read_text())["datasets"]
    assert datasets["bibtex"]["candidates"][0]["splits"] == first["datasets"]["bibtex"]["candidates"][0]["splits"]
    assert datasets["medical"]["candidates"][0]["splits"][0] == medical["kernel_variance=12"]["splits"][0]


def test_a_resumed_run_with_a_new_candidate_ranks_only_when_every_dataset_has_it(run_python, dataset_path, data_dir,
                                                                                 tmp_path):
    """Resumed with a new candidate and stopped on the second dataset: the first dataset holds both candidates,
    the second still its earlier one, and the file has no ranking until every dataset scores every candidate."""
    dataset_path("bibtex", "bibtex-train.arff.gz")
    dataset_path("medical", "medical-train.arff.gz")
    output = tmp_path / "cv.json"
    result = json.loads(run_python("-c", RESUME_STOPPED, output, data_dir, "bibtex").stdout.splitlines()[-1])
    first, kept = result["first"], result["kept"]
    assert "ranking" in first and "ranking" not in kept
    assert [c["name"] for c in kept["datasets"]["medical"]["candidates"]] == ["kernel_variance=12", "kernel_variance=4"]
    assert kept["datasets"]["medical"]["complete"] is True
    assert [len(c["splits"]) for c in kept["datasets"]["bibtex"]["candidates"]] == [1, 0]
