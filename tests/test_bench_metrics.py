"""The metrics benchmark runs (small sizes) and agrees with napkinXC (it raises otherwise)."""


def test_bench_metrics_smoke(capsys):
    from benchmarks import bench_metrics

    rows = bench_metrics.run(smoke=True, repeats=1)
    assert len(rows) == 4 and all("napkinxc_s" in row for row in rows)
    assert "ratio" in capsys.readouterr().out
