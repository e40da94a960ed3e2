"""The metrics benchmark runs (small sizes) and agrees with napkinXC (it raises otherwise)."""
import importlib.util
from pathlib import Path


def test_bench_metrics_quick(capsys):
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_metrics.py"
    spec = importlib.util.spec_from_file_location("bench_metrics", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.run(quick=True, repeats=1)
    assert len(rows) == 4 and all("napkinxc_s" in row for row in rows)
    assert "ratio" in capsys.readouterr().out
