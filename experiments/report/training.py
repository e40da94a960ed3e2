"""Generated parts of the training pages (see experiments.report): docs/training/results.md (the loop against
an earlier loop) and docs/training/distributed.md (what two workers cost on one machine)."""
import math

from experiments.report import fmt, generator, load, markdown_table

STORE = "docs/training/results"
#: fit_versions rows: (problem key, description, result file, command)
FIT_VERSIONS = (
    ("svgp-digits", "stock SVGP, digits, 10 latent GPs, M 50, batch 200 (9 repeats)",
     "fit_versions_a2d2399_digits_9repeats.json",
     "python -m benchmarks.fit_versions --problems svgp-digits --repeats 9"),
    ("mlgpf-bibtex", "MLGPF s-LINEAR, Bibtex, P 30, M 500, R 1000, batch 500 (3 repeats)",
     "fit_versions_a2d2399.json",
     "python -m benchmarks.fit_versions --data-dir $GPFLOW_EXT_DATA --problems mlgpf-bibtex --repeats 3"),
)
REPETITIONS = ("b", "c")
#: Bibtex's training rows (benchmarks/multiworker_mlgpf.py trains on all of them)
BIBTEX_TRAIN_ROWS = 4880


def _digits(value: float) -> int:
    return 4 if value < 1 else 2


@generator("training-fit-versions")
def fit_versions_table() -> str:
    rows = []
    for key, description, name, command in FIT_VERSIONS:
        result = load(f"{STORE}/{name}")
        row = result["problems"][key]
        ref = result["baseline_ref"]
        rows.append([description, fmt(row["current_s_per_epoch"], _digits(row["current_s_per_epoch"])),
                     fmt(row["baseline_s_per_epoch"], _digits(row["baseline_s_per_epoch"])),
                     fmt(row["baseline_over_current"], 3), f"`{command}`"])
    return markdown_table(["problem", "current s/epoch", f"{ref} s/epoch", f"{ref} / current", "command"], rows)


@generator("training-fit-versions-busy-digits")
def fit_versions_busy_digits() -> str:
    return fmt(load(f"{STORE}/fit_versions_a2d2399.json")["problems"]["svgp-digits"]["baseline_over_current"], 3)


def _runs(kind: str):
    return [load(f"{STORE}/multiworker_mlgpf_{kind}_{r}.json") for r in REPETITIONS]


def _cpu_all(run) -> float:
    """CPU seconds per epoch of all processes: the chief's (recorded) times the number of workers."""
    return run["cpu_median_after_first"] * run["workers"]


def _pair(values, digits: int = 2) -> str:
    return " / ".join(fmt(v, digits) for v in values)


@generator("training-multiworker-cost")
def multiworker_cost_table() -> str:
    rows = []
    for kind, label in (("one", "one process"), ("two", "two workers (MWMS, gRPC ring on `127.0.0.1`)")):
        runs = _runs(kind)
        cpu = _pair([_cpu_all(r) for r in runs])
        if kind == "two":
            cpu += f" ({_pair([r['cpu_median_after_first'] for r in runs])} per worker)"
        rows.append([label, _pair([r["median_after_first"] for r in runs]), cpu,
                     _pair([r["seconds_per_epoch"][0] for r in runs], 1)])
    return markdown_table(["run (5 epochs, 10 steps each)", "wall s / epoch (median, epochs 2-5)",
                           "CPU s / epoch, all processes", "first epoch (tracing), wall s"], rows)


def _range(values, digits: int = 1, unit: str = "") -> str:
    low, high = fmt(min(values), digits), fmt(max(values), digits)
    return f"{low}{unit}" if low == high else f"{low}-{high}{unit}"


@generator("training-multiworker-cpu-ratio")
def multiworker_cpu_ratio() -> str:
    return _range([_cpu_all(t) / _cpu_all(o) for o, t in zip(_runs("one"), _runs("two"))])


@generator("training-multiworker-cpu-overhead")
def multiworker_cpu_overhead() -> str:
    overhead = [_cpu_all(t) - _cpu_all(o) for o, t in zip(_runs("one"), _runs("two"))]
    steps = [math.ceil(BIBTEX_TRAIN_ROWS / r["batch_size"]) for r in _runs("one")]
    per_step_ms = [1000 * o / s for o, s in zip(overhead, steps)]
    return f"{_range(overhead)} CPU seconds per epoch ({_range(per_step_ms, 0)} ms per step)"


@generator("training-multiworker-tracing-ratio")
def multiworker_tracing_ratio() -> str:
    return _range([t["seconds_per_epoch"][0] / o["seconds_per_epoch"][0] for o, t in zip(_runs("one"), _runs("two"))])


@generator("training-xla-step")
def xla_step_table() -> str:
    result = load(f"{STORE}/xla_step.json")
    rows = []
    for name, row in result["models"].items():
        rows.append([f"`{name}`: {row['description']}", fmt(1000 * row["tf_function_seconds_per_step"], 2),
                     fmt(1000 * row["xla_seconds_per_step"], 2), fmt(row["tf_function_over_xla"], 2),
                     f"{row['max_abs_objective_difference']:.1e}", f"{row['max_abs_objective']:.1e}"])
    return markdown_table(["model", "tf.function ms/step", "XLA ms/step", "tf.function / XLA",
                           "max abs Δ objective", "max abs objective"], rows)
