"""EarlyStopping: stops after `patience` evaluations without improvement, restores the best variables exactly,
counts the starting state, and keeps its state across a resumed run."""
import gpflow
import numpy as np
import pytest

from gpflow_ext.training import EarlyStopping, Metrics, fit


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 1))
    return X, np.sin(2 * X) + 0.1 * rng.normal(size=X.shape)


def _model(X):
    return gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(),
                              inducing_variable=X[:10].copy(), num_data=len(X))


def _snapshot(model):
    return [v.numpy().copy() for v in model.variables]


def test_stops_after_patience_and_restores_the_best_state_exactly():
    X, Y = _data()
    model = _model(X)
    scores = iter([5.0, 3.0, 1.0, 2.0, 4.0, 6.0, 7.0, 8.0, 9.0, 10.0])  # start, then epochs 1, 2, ...
    snapshots = {}

    def monitor(model, epoch):
        snapshots[epoch] = _snapshot(model)
        return next(scores)

    stop = EarlyStopping(monitor, name="val", patience=3)
    history = fit(model, (X, Y), epochs=10, batch_size=50, callbacks=[stop], progress=False)
    assert stop.values == {0: 5.0, 1: 3.0, 2: 1.0, 3: 2.0, 4: 4.0, 5: 6.0}
    assert stop.best_epoch == 2 and stop.best_value == 1.0 and stop.stopped_epoch == 5
    assert history.epochs == [1, 2, 3, 4, 5]
    assert history.metrics["val"] == [3.0, 1.0, 2.0, 4.0, 6.0]
    for now, best in zip(_snapshot(model), snapshots[2]):
        np.testing.assert_array_equal(now, best)


def test_the_starting_state_is_kept_when_nothing_improves_on_it():
    X, Y = _data()
    model = _model(X)
    start = _snapshot(model)
    stop = EarlyStopping(lambda epoch: float(epoch), patience=2, mode="min")  # every epoch is worse than the start
    fit(model, (X, Y), epochs=6, batch_size=50, callbacks=[stop], progress=False)
    assert stop.best_epoch == 0 and stop.stopped_epoch == 2
    for now, before in zip(_snapshot(model), start):
        np.testing.assert_array_equal(now, before)


def test_max_mode_and_a_metric_of_another_callback():
    X, Y = _data()
    model = _model(X)
    values = iter([0.1, 0.5, 0.4, 0.3])
    stop = EarlyStopping("acc", mode="max", patience=2)
    fit(model, (X, Y), epochs=8, batch_size=50, callbacks=[Metrics({"acc": lambda: next(values)}), stop],
        progress=False)
    assert stop.best_epoch == 2 and stop.best_value == 0.5 and stop.stopped_epoch == 4


def test_objective_monitor_without_stopping_restores_the_best_epoch():
    X, Y = _data()
    model = _model(X)
    stop = EarlyStopping("objective", patience=100)
    history = fit(model, (X, Y), epochs=4, batch_size=50, learning_rate=0.05, callbacks=[stop], progress=False)
    assert stop.stopped_epoch is None
    assert stop.best_epoch == int(np.argmin(history.objective)) + 1


def test_state_survives_a_resumed_run(tmp_path):
    X, Y = _data()
    scores = [5.0, 3.0, 1.0, 2.0, 4.0, 6.0, 7.0]

    def run(epochs):
        model = _model(X)
        stop = EarlyStopping(lambda epoch: scores[epoch], patience=3)
        fit(model, (X, Y), epochs=epochs, batch_size=50, callbacks=[stop], checkpoint_dir=tmp_path,
            progress=False)
        return model, stop

    first, stop = run(3)  # epochs 1..3: best at 2, one evaluation without improvement
    assert stop.best_epoch == 2 and stop.stopped_epoch is None
    best_state = _snapshot(first)
    resumed, stop = run(10)  # continues at epoch 4: two more without improvement -> stops at epoch 5
    assert stop.best_epoch == 2 and stop.stopped_epoch == 5
    for now, best in zip(_snapshot(resumed), best_state):
        np.testing.assert_array_equal(now, best)
    again, stop = run(10)  # a run that stopped stays stopped: nothing is trained
    assert stop.stopped_epoch == 5
    for now, best in zip(_snapshot(again), best_state):
        np.testing.assert_array_equal(now, best)


@pytest.mark.parametrize("kwargs, match", [
    (dict(monitor=3), "monitor must be"), (dict(monitor="x", mode="up"), "mode must be"),
    (dict(monitor="x", patience=0), "patience must be"), (dict(monitor="x", min_delta=-1.0), "min_delta must be"),
])
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        EarlyStopping(**kwargs)


def test_inf_marks_a_state_that_is_never_chosen():
    X, Y = _data()
    model = _model(X)
    scores = iter([2.0, float("inf"), 1.0, float("inf")])  # start, epochs 1-3
    stop = EarlyStopping(lambda: next(scores), patience=5)
    fit(model, (X, Y), epochs=3, batch_size=50, callbacks=[stop], progress=False)
    assert stop.best_epoch == 2 and stop.best_value == 1.0
    with pytest.raises(ValueError, match="returned -inf"):
        fit(_model(X), (X, Y), epochs=1, batch_size=50, progress=False,
            callbacks=[EarlyStopping(lambda: -float("inf"))])


def test_a_non_finite_score_is_an_error_naming_the_monitor():
    X, Y = _data()
    with pytest.raises(ValueError, match="'val' returned nan"):
        fit(_model(X), (X, Y), epochs=2, batch_size=50, progress=False,
            callbacks=[EarlyStopping(lambda: float("nan"), name="val")])
