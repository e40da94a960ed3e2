"""Seconds per epoch of a small MLGPF run on Bibtex, in one process or as one of W workers.

    python -m benchmarks.multiworker_mlgpf --output one.json
    python -m gpflow_ext.training.launch --workers 2 --cpu -- python -m benchmarks.multiworker_mlgpf \\
        --strategy multiworker --output two.json

s-LINEAR MLGPF (M=100 subspace inducing inputs, R=300, P=10, 20 sampled negative labels per row) on the
4 880 Bibtex training rows, global batch 500, Adam; the first epoch holds the tracing, so the figures
reported are medians of the later epochs: wall seconds, and CPU seconds of this process (every thread),
which a loaded machine disturbs less than wall time. Each worker prints its own; only the chief writes
the JSON. Workers on one machine share
its cores: on a 2-core machine two workers measure the strategy's overhead (collective all-reduce of
every gradient, per-step synchronisation), not a speed-up.
"""
import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser, make_strategy, write_results


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], logdir=False, strategy=True)
    parser.add_argument("--batch-size", type=int, default=500)
    args = parser.parse_args()
    strategy = make_strategy(args)  # before any TensorFlow operation

    import contextlib
    import statistics
    import time

    from gpflow_ext.data import load_bibtex
    from gpflow_ext.recipes.mlgpf import build_mlgpf
    from gpflow_ext.recipes.mlgpf_config import paper_config
    from gpflow_ext.training import Callback, fit, is_chief

    class CpuSeconds(Callback):
        def __init__(self):
            self.marks, self.per_epoch = [], []

        def on_train_begin(self, run):
            self.marks.append(time.process_time())

        def on_epoch_end(self, run):
            self.marks.append(time.process_time())
            self.per_epoch.append(self.marks[-1] - self.marks[-2])

    train, _ = load_bibtex(args.data_dir, download=False)
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        config = paper_config("s-linear", num_inducing=100, num_latent_gps=10, rank=300, num_negative_samples=20,
                              seed=args.seed)
        model = build_mlgpf(config, train.X, train.Y)
    epochs = args.epochs or 4
    cpu = CpuSeconds()
    history = fit(model, model.prepare_data(train.X, train.Y), epochs=epochs, batch_size=args.batch_size,
                  learning_rate=0.01, seed=args.seed, progress=False, strategy=strategy, callbacks=[cpu])
    replicas = 1 if strategy is None else strategy.num_replicas_in_sync
    later = history.seconds_per_epoch[1:] or history.seconds_per_epoch
    cpu_later = cpu.per_epoch[1:] or cpu.per_epoch
    results = {"workers": replicas, "batch_size": args.batch_size, "epochs": epochs,
               "seconds_per_epoch": history.seconds_per_epoch, "median_after_first": statistics.median(later),
               "cpu_seconds_per_epoch": cpu.per_epoch, "cpu_median_after_first": statistics.median(cpu_later),
               "objective": history.objective}
    print(f"{replicas} worker(s): seconds per epoch {[round(s, 2) for s in history.seconds_per_epoch]}, "
          f"median after the first {results['median_after_first']:.2f}; CPU seconds of this process per epoch "
          f"{[round(s, 2) for s in cpu.per_epoch]}, median after the first {results['cpu_median_after_first']:.2f}")
    if is_chief(strategy):
        write_results(results, args.output)


if __name__ == "__main__":
    main()
