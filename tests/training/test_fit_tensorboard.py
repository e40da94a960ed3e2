"""TensorBoard event files written by fit contain the scalars and images (read back with EventAccumulator)."""
import numpy as np
import tensorflow as tf
from gpflow.monitor import ExecuteCallback, MonitorTaskGroup
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from gpflow_ext.training import Metrics, TensorBoard, fit


def test_event_files_contain_scalars_parameters_metrics_and_images(th, tmp_path):
    X, Y = th.regression_data(n=40)
    model = th.svgp(X)

    def plot(fig, ax):
        ax.plot(X[:, 0], Y[:, 0], ".")

    calls = []
    extra = MonitorTaskGroup(ExecuteCallback(lambda epoch=None, objective=None, **_: calls.append((epoch, objective))), period=3)
    history = fit(
        model, (X, Y), epochs=3, batch_size=10, logdir=tmp_path,
        callbacks=[Metrics({"test_rmse": lambda model: float(np.sqrt(np.mean((model.predict_f(X)[0].numpy() - Y) ** 2)))}),
                   TensorBoard(log_every=2, monitor=extra, images={"fit_plot": plot}, images_every=3)],
        progress=False,
    )
    accumulator = EventAccumulator(str(tmp_path), size_guidance={"scalars": 0, "tensors": 0, "images": 0})
    accumulator.Reload()
    tags = accumulator.Tags()
    # tf.summary (TF2) writes scalars as tensors
    scalars, images = {}, {}
    for tag in tags["tensors"]:
        events = accumulator.Tensors(tag)
        arrays = [tf.make_ndarray(e.tensor_proto) for e in events]
        if arrays[0].dtype == object:  # image summaries: [width, height, png bytes...]
            images[tag] = [(e.step, a) for e, a in zip(events, arrays)]
        else:
            scalars[tag] = [(e.step, float(a)) for e, a in zip(events, arrays)]
    objective = scalars["training/objective"]
    assert [step for step, _ in objective] == [2, 4, 6, 8, 10, 12]
    assert all(np.isfinite(v) for _, v in objective)
    epoch_objective = scalars["training/epoch_objective"]
    assert [step for step, _ in epoch_objective] == [4, 8, 12]
    np.testing.assert_allclose([v for _, v in epoch_objective], history.objective, rtol=1e-6)  # float32 summaries
    assert [step for step, _ in scalars["metrics/test_rmse"]] == [4, 8, 12]
    np.testing.assert_allclose([v for _, v in scalars["metrics/test_rmse"]], history.metrics["test_rmse"], rtol=1e-6)
    assert "kernel.variance" in scalars and "likelihood.variance" in scalars
    assert "kernel.lengthscales[0]" in scalars
    np.testing.assert_allclose(scalars["kernel.variance"][-1][1], model.kernel.variance.numpy(), rtol=1e-6)
    assert len(scalars["training/seconds_per_epoch"]) == 3
    assert [step for step, _ in images["fit_plot"]] == [12]
    png = images["fit_plot"][0][1][2]
    assert png.startswith(b"\x89PNG")
    assert [epoch for epoch, _ in calls] == [1, 2, 3, 3]  # steps 3, 6, 9, 12 (4 steps per epoch) and all(np.isfinite(v) for _, v in calls)
    assert history.last_checkpoint.startswith(str(tmp_path / "checkpoints"))
