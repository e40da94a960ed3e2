"""MLGPF s-LINEAR trained from XMC files on disk, end to end, at AmazonCat-13K size.

    python -m benchmarks.amazoncat_scale --train DIR/train.txt --test DIR/test.txt --output run.json

Pipeline (nothing holds X whole): one streamed pass for the label frequencies (b_k = logit of each
label's frequency) and the mean ‖x‖² (the linear kernel's variance is its inverse) -> the subspace
basis X̃ (R = 2000) and A by :meth:`SubspaceInducingPoints.from_stream` (``--passes`` passes over the
file; or ``--basis-sample n``: the same on ~n random rows held in memory) -> MLGPF s-LINEAR (P = 30,
M = 500, |B| = 500, ``--num-negative-samples`` negative labels per row, eq. 23) trained by
``gpflow_ext.training.fit`` on :class:`gpflow_ext.data.XMCTextSource` (or its TFRecord shards,
``--tfrecord-dir``), with step-level checkpoints -> P@1/3/5 on the test file, streamed.

``--model label-gps`` trains the ``label-gps`` recipe's model instead (one linear GP per label,
K = 13,330 of them, on Z = X̃ with R = ``--rank``, σ² = ``--kernel-variance`` fixed; the rows are used as the files
hold them, TF-IDF-like with unit norm, without the recipe's own IDF re-weighting, a per-row sparse scaling);
``--num-negative-samples 0`` trains every label exactly.

``--tune`` first runs the ``best`` recipe's choice of σ² (:func:`gpflow_ext.recipes.mlgpf_auto.resolve_config` on
``best_config``: the inner 3-fold cross-validation of the MAP twin on the recipe's TF-IDF rows, within its
``tuning_max_labels`` and ``tuning_budget``) on the whole training file read into memory, and trains the label-gps
model with the σ² it chooses: the phase ``tuning`` times it, and the record goes into the JSON.

``--label-scores`` (with ``--tune``) adds the ``best`` recipe's first stage: the label-score features
(:class:`gpflow_ext.recipes.mlgpf_stacking.LabelScoreFeatures` at α = ``BEST_LABEL_SCORE_WEIGHT``, the chosen σ², the
recipe's folds, rank and ``tuning_budget``) fitted on the training rows in memory and joined to them out-of-fold (phase
``label_scores``); the basis (from ``--basis-sample`` random joined rows) and the training then use the joined rows
from memory (``fit`` on the CSR arrays), and each test block is joined with the first stage fitted on every training
row before it is scored (in ``evaluation``).

``--max-steps S`` trains S steps of the first epoch only: seconds per step (median over steps after
the first 10) times ceil(N / B) projects the epoch. The JSON holds the phase times, the s/step,
the (projected) s/epoch and the peak RSS (``ru_maxrss``) after each phase.
"""
import json
import resource
import sys
import time
from pathlib import Path

import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser

import numpy as np
import scipy.sparse as sp

from gpflow_ext.results import write_results


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far (the machine may be shared: wall time is not all ours)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_gb() -> float:
    """Peak resident set size of this process so far, in GB (Linux ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def data_statistics(path, sample_rows: int = 0, seed: int = 0):
    """One streamed pass: label counts [K], mean ‖x‖², N, and ~``sample_rows`` random rows (CSR)."""
    from gpflow_ext.data import iter_xmc_chunks, read_xmc_header

    N, D, K = read_xmc_header(path)
    rng = np.random.default_rng(seed)
    counts, sq, kept = np.zeros(K), 0.0, []
    for block in iter_xmc_chunks(path, chunk_rows=20_000):
        counts += np.asarray(block.Y.sum(axis=0)).ravel()
        sq += float(block.X.multiply(block.X).sum())
        if sample_rows:
            kept.append(block.X[rng.random(block.X.shape[0]) < sample_rows / N])
    sample = sp.vstack(kept, format="csr") if kept else None
    return counts, sq / N, N, D, K, sample


def _record(name: str, phases: dict, cpu: dict, start: float, cpu_start: float) -> None:
    """Store a phase's wall and CPU seconds and report them on stderr."""
    phases[name], cpu[name] = time.perf_counter() - start, cpu_seconds() - cpu_start
    print(f"{name}: {phases[name]:.1f} s wall, {cpu[name]:.1f} s CPU, peak RSS {peak_rss_gb():.2f} GB",
          file=sys.stderr, flush=True)


class StepTimes:
    """A fit callback recording the wall-clock time at the end of every step."""

    def __init__(self):
        from gpflow_ext.training.callbacks import Callback

        self.times = []
        outer = self

        class _Hook(Callback):
            def on_step_end(self, run) -> None:
                outer.times.append(time.perf_counter())

        self.callback = _Hook()

    def seconds_per_step(self, skip: int = 10) -> float:
        steps = np.diff(self.times)[skip:]
        return float(np.median(steps)) if steps.size else float("nan")


def evaluate(model, path, max_rows: int = 0, batch_size: int = 1000, rows_transform=None) -> dict:
    """P@1/3/5 (%) of the mean utilities on the test file, streamed in blocks (each block's rows through
    ``rows_transform`` first, if given)."""
    from gpflow_ext.data import iter_xmc_chunks

    hits, rows = np.zeros(5), 0
    for block in iter_xmc_chunks(path, chunk_rows=batch_size):
        X, Y = block.X, block.Y
        if max_rows and rows >= max_rows:
            break
        if max_rows:
            X, Y = X[: max_rows - rows], Y[: max_rows - rows]
        X = X if rows_transform is None else rows_transform(X)
        top = model.predict_top_k(X, k=5, batch_size=batch_size)  # [n, 5]
        found = np.asarray(Y[np.repeat(np.arange(X.shape[0]), 5), top.ravel()]).reshape(-1, 5)  # [n, 5]
        hits += np.cumsum(found, axis=1).sum(axis=0)
        rows += X.shape[0]
    return {f"P@{k}": 100.0 * hits[k - 1] / (k * rows) for k in (1, 3, 5)} | {"test_rows": rows}


class JoinedRowsSource:
    """The training rows joined with their label scores, in memory: called with an epoch, ``fit``'s minibatches of
    (X, Y) for it, as :class:`~gpflow_ext.data.XMCTextSource` gives them from the file."""

    def __init__(self, X, Y, batch_size: int, seed: int, dtype):
        import tensorflow as tf

        from gpflow_ext.training.data import ArrayData, steps_per_epoch

        self.arrays = ArrayData((X, Y), tf.as_dtype(dtype))
        self.batch_size, self.seed = batch_size, seed
        self.num_features = int(X.shape[1])
        self.steps_per_epoch = steps_per_epoch(int(X.shape[0]), batch_size)

    def __call__(self, epoch: int):
        from gpflow_ext.training.data import minibatch_dataset

        return minibatch_dataset(self.arrays, self.batch_size, epoch, epoch + 1, self.seed, True)


def joined_rows(args, config, rows, float_type, phases, cpu, result):
    """The ``best`` recipe's first stage on the rows in memory (phase ``label_scores``): the fitted
    :class:`LabelScoreFeatures`, the joined rows as a :class:`JoinedRowsSource` and ~``--basis-sample`` random joined
    rows (CSR) for the basis."""
    from gpflow_ext.recipes.mlgpf_config import BEST_LABEL_SCORE_WEIGHT
    from gpflow_ext.recipes.mlgpf_stacking import LabelScoreFeatures

    start, cpu_start = time.perf_counter(), cpu_seconds()
    features = LabelScoreFeatures(BEST_LABEL_SCORE_WEIGHT, config.kernel_variance, folds=config.tuning_folds,
                                  rank=config.rank, seed=config.seed, budget=config.tuning_budget).fit(rows.X, rows.Y)
    joined = features.training_rows.astype(float_type)  # [N, D + L]
    features.training_rows = None  # one copy of the joined rows: the source's
    _record("label_scores", phases, cpu, start, cpu_start)
    result["label_scores"] = {"weight": BEST_LABEL_SCORE_WEIGHT, "kernel_variance": config.kernel_variance,
                              "labels": int(features.labels.size), "folds": features.folds,
                              "rows_fitted": features.rows_fitted, "predictor": type(features.predictor).__name__,
                              "nnz_per_row": joined.nnz / joined.shape[0]}
    result["rss_gb_after_label_scores"] = peak_rss_gb()
    rng = np.random.default_rng(args.seed)
    sample = joined[np.sort(rng.choice(joined.shape[0], min(args.basis_sample or joined.shape[0], joined.shape[0]),
                                       replace=False))] if args.basis_sample else joined
    source = JoinedRowsSource(joined, rows.Y, args.batch_size, args.seed, float_type)
    return features, source, sample


def run(args) -> dict:
    import gpflow
    import tensorflow as tf

    from gpflow_ext.data import XMCTextSource, XMCTFRecordSource, write_xmc_tfrecords
    from gpflow_ext.inducing_variables import BasisInducingPoints, SubspaceInducingPoints
    from gpflow_ext.models import MLGPF
    from gpflow_ext.training import Checkpointing, fit

    result, phases, cpu = {"args": {k: str(v) for k, v in vars(args).items()}}, {}, {}
    float_type = np.float32 if args.float32 else np.float64
    gpflow.config.set_default_float(float_type)  # before any model, source or basis is built
    result["float"] = np.dtype(float_type).name
    tf.random.set_seed(args.seed)
    start, cpu_start = time.perf_counter(), cpu_seconds()
    counts, mean_sq, N, D, K, sample = data_statistics(args.train, args.basis_sample, args.seed)
    _record("statistics", phases, cpu, start, cpu_start)
    result.update(N=N, D=D, K=K, R=args.rank, M=args.num_inducing, P=args.num_latent_gps, B=args.batch_size)
    result["rss_gb_after_statistics"] = peak_rss_gb()

    if args.tfrecord_dir:
        start, cpu_start = time.perf_counter(), cpu_seconds()
        if not (Path(args.tfrecord_dir) / "xmc_meta.json").exists():
            write_xmc_tfrecords(args.train, args.tfrecord_dir, rows_per_shard=args.rows_per_shard)
        _record("tfrecord_conversion", phases, cpu, start, cpu_start)
        source = XMCTFRecordSource(args.tfrecord_dir, args.batch_size, args.shuffle_buffer, args.seed,
                                   dtype=float_type)
    else:
        source = XMCTextSource(args.train, args.batch_size, args.shuffle_buffer, args.seed, dtype=float_type)

    label_gps = args.model == "label-gps"
    kernel_variance, features = args.kernel_variance, None
    if args.tune:
        from gpflow_ext.data import read_xmc_text
        from gpflow_ext.recipes.mlgpf_auto import resolve_config
        from gpflow_ext.recipes.mlgpf_config import best_config

        start, cpu_start = time.perf_counter(), cpu_seconds()
        rows = read_xmc_text(args.train)
        _record("reading_for_tuning", phases, cpu, start, cpu_start)
        start, cpu_start = time.perf_counter(), cpu_seconds()
        config, record = resolve_config(best_config(dataset="amazoncat", seed=args.seed), rows.X, rows.Y)
        _record("tuning", phases, cpu, start, cpu_start)
        result["tuning"] = record
        result["rss_gb_after_tuning"] = peak_rss_gb()
        kernel_variance = config.kernel_variance
        if args.label_scores:
            features, source, sample = joined_rows(args, config, rows, float_type, phases, cpu, result)
            D = source.num_features
            result["D_joined"] = D
        del rows
    start, cpu_start = time.perf_counter(), cpu_seconds()
    if args.basis_cache is not None and Path(args.basis_cache).exists():
        cached = np.load(args.basis_cache)  # the basis of an earlier run (X̃ as float32, A)
        if cached["Vt"].shape[0] != D:
            raise ValueError(f"--basis-cache {args.basis_cache} holds a basis of {cached['Vt'].shape[0]} features; "
                             f"these rows have {D} (the label-score features add columns: use another cache file)")
        if label_gps:  # Z = X̃ itself
            iv = BasisInducingPoints(cached["Vt"])
        else:
            iv = SubspaceInducingPoints(cached["Vt"], cached["A"], orthonormal=True)  # X̃ float32 until the model's copy
        result["basis_from_cache"] = {"file": str(args.basis_cache), "computed_seconds": float(cached["seconds"]),
                                      "computed_cpu_seconds": float(cached["cpu_seconds"])}
        del cached
    else:
        blocks = [sample[i : i + 20_000] for i in range(0, sample.shape[0], 20_000)] if sample is not None else source.blocks
        work_dtype = np.float32 if args.float32_basis_work else np.float64
        if label_gps:
            iv = BasisInducingPoints.from_stream(blocks, min(args.rank, D), D, seed=args.seed, passes=args.passes,
                                                 work_dtype=work_dtype)
        else:
            iv = SubspaceInducingPoints.from_stream(
                blocks, args.num_inducing, min(args.rank, D), D, seed=args.seed, passes=args.passes,
                kmeans_max_iter=10, kmeans_sample=args.kmeans_sample, work_dtype=work_dtype)
        del blocks
        if args.basis_cache is not None:
            np.savez(args.basis_cache, Vt=iv.basis_t.numpy().T.astype(np.float32), A=iv.A.numpy(),
                     seconds=time.perf_counter() - start, cpu_seconds=cpu_seconds() - cpu_start)
    del sample
    _record("basis", phases, cpu, start, cpu_start)
    result["rss_gb_after_basis"] = peak_rss_gb()

    frequency = np.clip(counts / N, 0.5 / N, 1.0 - 0.5 / N)
    negatives = args.num_negative_samples or None  # 0: every label exactly
    bias = np.log(frequency) - np.log1p(-frequency)
    if label_gps:  # the label-gps recipe's model: one linear GP per label on Z = X̃, σ² fixed
        kernel = gpflow.kernels.Linear(variance=kernel_variance)
        result["kernel_variance"] = kernel_variance  # as trained: --kernel-variance, or the σ² --tune chose
        gpflow.set_trainable(kernel.variance, False)
        model = MLGPF(kernel, iv, num_labels=K, num_latent_gps=K, num_data=N, num_negative_samples=negatives,
                      bias=bias, seed=args.seed, independent_labels=True)
    else:
        model = MLGPF(gpflow.kernels.Linear(variance=1.0 / max(mean_sq, 1e-12)), iv, num_labels=K,
                      num_latent_gps=args.num_latent_gps, num_data=N, num_negative_samples=negatives, bias=bias,
                      seed=args.seed)
    result["model"] = args.model
    result["exact_labels"] = negatives is None
    data = source if not args.max_steps else (lambda epoch: source(epoch).take(args.max_steps))
    timer = StepTimes()
    start, cpu_start = time.perf_counter(), cpu_seconds()
    history = fit(model, data, epochs=args.epochs, learning_rate=args.learning_rate, seed=args.seed,
                  callbacks=[timer.callback] + ([Checkpointing(args.checkpoint_dir, resume=False,
                                                               every_steps=args.checkpoint_every_steps)]
                                                if args.checkpoint_dir else []), progress=False)
    _record("training", phases, cpu, start, cpu_start)
    result["rss_gb_after_training"] = peak_rss_gb()
    steps = len(timer.times)
    result["steps_trained"] = steps
    result["seconds_per_step"] = timer.seconds_per_step()
    result["steps_per_epoch"] = source.steps_per_epoch
    result["seconds_per_epoch_projected"] = result["seconds_per_step"] * source.steps_per_epoch
    if not args.max_steps:
        result["seconds_per_epoch_measured"] = [float(s) for s in history.seconds_per_epoch]
    result["final_objective"] = float(history.final_objective)

    start, cpu_start = time.perf_counter(), cpu_seconds()
    result.update(evaluate(model, args.test, args.max_test_rows, rows_transform=features))
    _record("evaluation", phases, cpu, start, cpu_start)
    result["phases_seconds"] = phases
    result["phases_cpu_seconds"] = cpu
    result["training_cpu_seconds_per_step"] = cpu["training"] / max(steps, 1)
    result["peak_rss_gb"] = peak_rss_gb()
    result["paper_minutes_per_epoch"] = 400.7  # Table 5, s-LINEAR on AmazonCat (Xeon server, real data)
    return result


def main(argv=None) -> dict:
    parser = base_parser(__doc__.splitlines()[0], data_dir=False, epochs=False, logdir=False, float32=True)
    parser.add_argument("--train", type=Path, required=True)
    parser.add_argument("--test", type=Path, required=True)
    parser.add_argument("--rank", type=int, default=2000, help="R")
    parser.add_argument("--num-inducing", type=int, default=500, help="M")
    parser.add_argument("--num-latent-gps", type=int, default=30, help="P")
    parser.add_argument("--batch-size", type=int, default=500, help="|B|")
    parser.add_argument("--model", choices=("s-linear", "label-gps"), default="s-linear",
                        help="MLGPF s-LINEAR (P shared latent GPs, Z = A X̃) or the label-gps recipe's model (one "
                             "linear GP per label on Z = X̃, fixed --kernel-variance)")
    parser.add_argument("--kernel-variance", type=float, default=12.0, help="σ² of the label-gps model")
    parser.add_argument("--tune", action="store_true",
                        help="choose σ² by the best recipe's rule on the training file first (label-gps only)")
    parser.add_argument("--label-scores", action="store_true",
                        help="with --tune: the best recipe's label-score first stage, the rows joined in memory")
    parser.add_argument("--num-negative-samples", type=int, default=100,
                        help="|L_i| (eq. 23); 0: every label exactly")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-steps", type=int, default=0, help="train only this many steps of each epoch (0: all)")
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--passes", type=int, default=3, help="passes of the streamed randomized SVD")
    parser.add_argument("--basis-sample", type=int, default=0, help="basis from ~this many random rows (0: all rows)")
    parser.add_argument("--basis-cache", type=Path, default=None,
                        help="load X̃ and A from this .npz if it exists, else compute them and save them there")
    parser.add_argument("--kmeans-sample", type=int, default=20_000)
    parser.add_argument("--float32-basis-work", action="store_true", help="float32 [D, L] work arrays in the SVD")
    parser.add_argument("--shuffle-buffer", type=int, default=20_000)
    parser.add_argument("--tfrecord-dir", type=Path, default=None, help="convert to (or read) TFRecord shards here")
    parser.add_argument("--rows-per-shard", type=int, default=100_000)
    parser.add_argument("--checkpoint-dir", type=Path, default=None)
    parser.add_argument("--checkpoint-every-steps", type=int, default=None)
    parser.add_argument("--max-test-rows", type=int, default=0, help="evaluate on the first rows only (0: all)")
    args = parser.parse_args(argv)
    if args.tune and args.model != "label-gps":
        parser.error("--tune chooses the σ² of the label-gps model: add --model label-gps")
    if args.label_scores and not args.tune:
        parser.error("--label-scores fits the first stage at the σ² --tune chooses: add --tune")
    result = run(args)
    text = json.dumps(result, indent=1)
    print(text)
    write_results(result, args.output)
    return result


if __name__ == "__main__":
    main()
