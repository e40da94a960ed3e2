"""The metrics benchmark (``python -m benchmarks.bench_metrics --smoke``) runs (small sizes) and agrees with
napkinXC (it exits with an error otherwise)."""
import json


def test_bench_metrics_smoke(tmp_path, run_python):
    output = tmp_path / "bench_metrics.json"
    printed = run_python("-m", "benchmarks.bench_metrics", "--smoke", "--repeats", "1", "--output", output).stdout
    rows = json.loads(output.read_text())["rows"]
    assert len(rows) == 4 and all("napkinxc_s" in row for row in rows)
    assert "ratio" in printed
