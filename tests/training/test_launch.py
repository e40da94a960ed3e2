"""python -m gpflow_ext.training.launch: one TF_CONFIG per worker on free ports, [worker i] prefixes, a
failing worker stops the others and sets the exit status."""
import io
import json
import subprocess
import sys
import time

import pytest

from gpflow_ext.training.launch import free_ports, launch, main, tf_config

REPORT = "import json, os; task = json.loads(os.environ['TF_CONFIG']); print(json.dumps(task)); print('done')"


def test_every_worker_gets_its_tf_config_and_prefixed_lines():
    sink = io.StringIO()
    status = launch([sys.executable, "-c", REPORT], workers=3, sink=sink)
    assert status == 0
    lines = sink.getvalue().splitlines()
    configs = {}
    for index in range(3):
        mine = [line[len(f"[worker {index}] "):] for line in lines if line.startswith(f"[worker {index}] ")]
        assert mine[-1] == "done", lines
        configs[index] = json.loads(mine[0])
    clusters = {json.dumps(c["cluster"]) for c in configs.values()}
    assert len(clusters) == 1  # one cluster, three distinct 127.0.0.1 ports
    workers = configs[0]["cluster"]["worker"]
    assert len(set(workers)) == 3 and all(w.startswith("127.0.0.1:") for w in workers)
    assert [configs[i]["task"] for i in range(3)] == [{"type": "worker", "index": i} for i in range(3)]


def test_a_failing_worker_stops_the_others_and_sets_the_exit_status():
    script = ("import json, os, sys, time; i = json.loads(os.environ['TF_CONFIG'])['task']['index']\n"
              "if i == 1: print('failing'); sys.exit(3)\n"
              "time.sleep(120)")
    sink = io.StringIO()
    started = time.monotonic()
    status = launch([sys.executable, "-c", script], workers=2, sink=sink, grace=5.0)
    assert status == 3
    assert time.monotonic() - started < 60  # worker 0 did not sleep its 120 s
    assert "[worker 1] failing" in sink.getvalue()
    assert "worker 1 exited with status 3; stopping the others" in sink.getvalue()


def test_command_line(tmp_path):
    ports = free_ports(2)
    assert len(set(ports)) == 2
    assert json.loads(tf_config(["h:1", "h:2"], 1)) == {"cluster": {"worker": ["h:1", "h:2"]},
                                                        "task": {"type": "worker", "index": 1}}
    proc = subprocess.run([sys.executable, "-m", "gpflow_ext.training.launch", "--workers", "2", "--cpu", "--",
                           sys.executable, "-c", "import os; print(os.environ['CUDA_VISIBLE_DEVICES'])"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "[worker 0] -1" in proc.stdout and "[worker 1] -1" in proc.stdout
    with pytest.raises(SystemExit):
        main(["--workers", "2"])  # no command
    with pytest.raises(SystemExit):
        main(["--workers", "2", "--ports", "1", "--", "true"])  # one port for two workers
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        launch(["true"], workers=0)
