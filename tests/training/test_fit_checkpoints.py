"""Checkpoints that never lose work: fingerprints, explicit resume, recovery from damaged files,
step-level checkpoints with bit-exact mid-epoch resume."""
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from gpflow_ext.training import Checkpointing, CheckpointMismatchError, fit

KW = dict(batch_size=10, learning_rate=0.05, seed=3, progress=False)


def checkpoint_files(folder: Path):
    """Every file under ``folder`` (recursively), as relative paths."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def ckpt_prefixes(folder: Path):
    return sorted(int(p.name[len("ckpt-"):-len(".index")]) for p in folder.glob("ckpt-*.index"))


@pytest.fixture
def run3(th, tmp_path):
    """A 3-epoch run (4 steps per epoch: ckpt-4, -8, -12) and an uninterrupted 3-epoch twin."""
    X, Y = th.regression_data(n=40)
    folder = tmp_path / "run"
    fit(th.svgp(X), (X, Y), epochs=3, callbacks=[Checkpointing(folder, max_checkpoints=10)], **KW)
    straight = th.svgp(X)
    history = fit(straight, (X, Y), epochs=3, **KW)
    return X, Y, folder, th.values(straight), history


def test_changed_data_learning_rate_batch_size_or_model_are_refused_by_name(th, tmp_path):
    X, Y = th.regression_data(n=40)
    fit(th.svgp(X), (X, Y), epochs=1, checkpoint_dir=tmp_path, **KW)
    before = checkpoint_files(tmp_path)
    cases = [
        (dict(data=(X, Y + 0.1)), r"data\.digest: saved"),
        (dict(learning_rate=0.01), r"optimizer\.learning_rate: saved 0\.05, now 0\.01"),
        (dict(batch_size=20), r"data\.batch_size: saved 10, now 20"),
        (dict(seed=4), r"seed: saved 3, now 4"),
        (dict(model=th.svgp(X, num_inducing=4)), r"variables\.inducing_variable\.Z: saved \[\[6, 2\]"),
    ]
    for change, message in cases:
        model = change.pop("model", th.svgp(X))
        data = change.pop("data", (X, Y))
        with pytest.raises(CheckpointMismatchError, match=message) as info:
            fit(model, data, epochs=2, checkpoint_dir=tmp_path, **{**KW, **change})
        assert "resume=False" in str(info.value)
        assert checkpoint_files(tmp_path) == before  # nothing written, moved or deleted


def test_resume_false_starts_afresh_and_keeps_the_old_run(th, tmp_path, capsys):
    X, Y = th.regression_data(n=40)
    fit(th.svgp(X), (X, Y), epochs=2, checkpoint_dir=tmp_path, **KW)
    old = ckpt_prefixes(tmp_path)
    model = th.svgp(X)
    history = fit(model, (X, Y), epochs=1, callbacks=[Checkpointing(tmp_path, resume=False)],
                  **{**KW, "learning_rate": 0.01})
    assert history.start_epoch == 0 and history.epochs == [1]
    assert "moved the 2 existing checkpoint(s) to" in capsys.readouterr().out
    assert ckpt_prefixes(tmp_path / "previous-1") == old and ckpt_prefixes(tmp_path) == [4]


def test_resume_true_needs_a_checkpoint_and_resume_must_be_a_known_value(th, tmp_path):
    X, Y = th.regression_data(n=40)
    with pytest.raises(ValueError, match=r"resume=True but there is no checkpoint"):
        fit(th.svgp(X), (X, Y), epochs=1, callbacks=[Checkpointing(tmp_path, resume=True)], **KW)
    with pytest.raises(ValueError, match=r"resume must be 'auto', True or False, got 'yes'"):
        fit(th.svgp(X), (X, Y), epochs=1, callbacks=[Checkpointing(tmp_path, resume="yes")], **KW)


def _truncate(path: Path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _zero(path: Path):
    path.write_bytes(bytes(path.stat().st_size))


def _flip(path: Path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


DAMAGE = {
    "truncated data": ("ckpt-12.data-00000-of-00001", _truncate),
    "zeroed data": ("ckpt-12.data-00000-of-00001", _zero),
    "bit-flipped data": ("ckpt-12.data-00000-of-00001", _flip),
    "truncated index": ("ckpt-12.index", _truncate),
    "deleted data": ("ckpt-12.data-00000-of-00001", lambda p: p.unlink()),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_newest_checkpoint_falls_back_to_the_older_one(th, run3, damage):
    X, Y, folder, straight, straight_history = run3
    name, spoil = DAMAGE[damage]
    spoil(folder / name)
    resumed = th.svgp(X)
    with pytest.warns(UserWarning, match=r"ckpt-12 is unreadable .*moved to .*unreadable-1; resuming from the older .*ckpt-8"):
        history = fit(resumed, (X, Y), epochs=3, callbacks=[Checkpointing(folder, max_checkpoints=10)], **KW)
    assert history.start_epoch == 2 and history.trained_epochs == [3]
    assert th.max_abs_diff(th.values(resumed), straight) <= 1e-12  # epoch 3 retrained: same parameters
    np.testing.assert_allclose(history.objective, straight_history.objective, rtol=0, atol=1e-12)
    # the damaged files were kept aside, the rest is intact, and the new ckpt-12 did not overwrite anything
    assert {p.name for p in (folder / "unreadable-1").iterdir()} <= {"ckpt-12.index", "ckpt-12.data-00000-of-00001"}
    assert ckpt_prefixes(folder) == [4, 8, 12]


@pytest.mark.parametrize("state", ["deleted", "garbled"])
def test_checkpoints_without_a_readable_state_file_are_recovered(th, run3, state):
    X, Y, folder, straight, _ = run3
    before = ckpt_prefixes(folder)
    if state == "deleted":
        (folder / "checkpoint").unlink()
        expectation = _no_warning()
    else:
        (folder / "checkpoint").write_text("model_checkpoint_path: \x00\x01 garbage {{{\n")
        expectation = pytest.warns(UserWarning, match=r"state file .* is unreadable; kept it as .*checkpoint\.unreadable-1")
    resumed = th.svgp(X)
    with expectation:
        history = fit(resumed, (X, Y), epochs=4, callbacks=[Checkpointing(folder, max_checkpoints=10)], **KW)
    assert history.start_epoch == 3 and history.trained_epochs == [4]  # resumed from ckpt-12, not from 0
    assert ckpt_prefixes(folder) == before + [16]  # no trained epoch rotated away or overwritten
    if state == "garbled":
        assert (folder / "checkpoint.unreadable-1").exists()


class _no_warning:
    def __enter__(self):
        import warnings

        self.catcher = warnings.catch_warnings(record=True)
        self.caught = self.catcher.__enter__()
        warnings.simplefilter("always")

    def __exit__(self, *exc):
        self.catcher.__exit__(*exc)
        assert not [w for w in self.caught if "checkpoint" in str(w.message)], [str(w.message) for w in self.caught]


def test_no_readable_checkpoint_is_refused_and_nothing_is_touched(th, run3):
    X, Y, folder, _, _ = run3
    for number in (4, 8, 12):
        _zero(folder / f"ckpt-{number}.data-00000-of-00001")
    before = checkpoint_files(folder)
    with pytest.raises(ValueError, match=r"no checkpoint in .* is readable: .*ckpt-12 \(.*ckpt-8 \(.*ckpt-4 \("):
        fit(th.svgp(X), (X, Y), epochs=4, checkpoint_dir=folder, **KW)
    assert checkpoint_files(folder) == before


def test_step_level_checkpoints_resume_mid_epoch_bit_exactly(th, tmp_path, capsys):
    X, Y = th.regression_data(n=40)
    straight = th.svgp(X)
    h_straight = fit(straight, (X, Y), epochs=3, **KW)
    with pytest.raises(KeyboardInterrupt):  # stop after step 7 (epoch 2 of 4-step epochs), last save at step 6
        fit(th.svgp(X), (X, Y), epochs=3, callbacks=[th.StopAtStep(7), Checkpointing(tmp_path, every_steps=3)], **KW)
    assert "re-run the same command to resume from" in capsys.readouterr().out and ckpt_prefixes(tmp_path) == [3, 4, 6]
    resumed = th.svgp(X)
    history = fit(resumed, (X, Y), epochs=3, callbacks=[Checkpointing(tmp_path, every_steps=3)], **KW)
    assert "at epoch 1 + 2 step(s) (step 6)" in capsys.readouterr().out
    assert th.max_abs_diff(th.values(resumed), th.values(straight)) == 0.0
    assert history.objective == h_straight.objective and history.steps == [4, 8, 12]


def test_interrupt_before_the_first_checkpoint_says_so(th, tmp_path, capsys):
    X, Y = th.regression_data(n=40)
    with pytest.raises(KeyboardInterrupt):
        fit(th.svgp(X), (X, Y), epochs=3, checkpoint_dir=tmp_path, callbacks=[th.StopAtStep(2)], **KW)
    out = capsys.readouterr().out
    assert f"no checkpoint was written yet in {tmp_path}" in out and "pass logdir=" not in out


README_EXAMPLE = textwrap.dedent(
    """
    import gpflow
    import numpy as np
    from gpflow_ext.training import Metrics, fit

    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(2000, 1)); Y = np.sin(2 * X) + 0.1 * rng.normal(size=X.shape)
    model = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(),
                               inducing_variable=X[:20].copy(), num_data=len(X))
    rmse = lambda: float(np.sqrt(np.mean((model.predict_f(X)[0].numpy() - Y) ** 2)))
    history = fit(model, (X, Y), epochs=3, batch_size=256, learning_rate=0.02, seed=0,
                  logdir=LOGDIR, callbacks=[Metrics({"rmse": rmse}, every=5)], progress=False)
    print(history.objective[-1], history.metrics["rmse"][-1], history.median_seconds_per_epoch())
    """
)


def test_readme_example_runs_twice_in_one_process(tmp_path, capsys):
    code = README_EXAMPLE.replace("LOGDIR", repr(str(tmp_path / "sine")))
    first, second = {}, {}
    exec(compile(code, "readme-example", "exec"), first)
    exec(compile(code, "readme-example", "exec"), second)
    out = capsys.readouterr().out
    assert "already holds epoch 3 of 3: restored it, nothing left to train" in out
    assert second["history"].objective[-1] == first["history"].objective[-1]
    assert second["history"].metrics["rmse"][-1] == first["history"].metrics["rmse"][-1]
    assert second["rmse"]() == pytest.approx(first["rmse"](), abs=1e-12)  # the fresh model got the trained values


def test_readme_example_runs_twice_in_two_processes(tmp_path):
    script = tmp_path / "example.py"
    script.write_text(README_EXAMPLE.replace("LOGDIR", repr(str(tmp_path / "sine"))))
    runs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr[-3000:]
    last_lines = [r.stdout.strip().splitlines()[-1].split() for r in runs]
    assert last_lines[0][:2] == last_lines[1][:2]  # same final objective and rmse
    assert "nothing left to train" in runs[1].stdout


def test_rotation_counts_the_checkpoints_found_on_disk_after_a_damaged_one(th, tmp_path):
    """max_checkpoints holds after every save, also when the run resumed past a damaged checkpoint (the
    state file then lists a checkpoint that was set aside, and is rebuilt from the files present)."""
    X, Y = th.regression_data(n=40)
    folder = tmp_path / "run"
    fit(th.svgp(X), (X, Y), epochs=5, callbacks=[Checkpointing(folder, max_checkpoints=3)], **KW)
    assert ckpt_prefixes(folder) == [12, 16, 20]
    _truncate(folder / "ckpt-20.data-00000-of-00001")
    counts = []

    def count(**_):
        counts.append(len(ckpt_prefixes(folder)))

    with pytest.warns(UserWarning, match=r"ckpt-20 is unreadable"):
        history = fit(th.svgp(X), (X, Y), epochs=9, callbacks=[count, Checkpointing(folder, max_checkpoints=3)],
                      **KW)
    counts.append(len(ckpt_prefixes(folder)))
    assert history.start_epoch == 4 and ckpt_prefixes(folder) == [28, 32, 36]
    assert max(counts) <= 3, counts
