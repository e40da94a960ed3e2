"""Start one command as ``W`` workers of a ``tf.distribute.MultiWorkerMirroredStrategy`` cluster on this
machine::

    python -m gpflow_ext.training.launch --workers 2 -- python -m experiments.mlgpf_xmc --strategy multiworker

Each worker gets a ``TF_CONFIG`` naming every worker's ``host:port`` (free ports are picked here) and its
own index; worker 0 is the chief (it writes checkpoints and TensorBoard). Output lines are streamed with a
``[worker i]`` prefix. When a worker fails (non-zero exit or a signal) the others are stopped (SIGTERM,
then SIGKILL after ``--grace`` seconds) and the launcher exits with the failed worker's status, so a job
scheduler sees the failure. Re-running the same command resumes from the chief's last checkpoint.

On a real cluster the cluster manager sets ``TF_CONFIG`` instead (see ``docs/training/distributed.md``).
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TextIO

__all__ = ["free_ports", "tf_config", "launch", "main"]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct TCP ports that are free on ``host`` now (bound to port 0, then released)."""
    sockets, ports = [], []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
            ports.append(sock.getsockname()[1])
    finally:
        for sock in sockets:
            sock.close()
    return ports


def tf_config(addresses: Sequence[str], index: int) -> str:
    """The ``TF_CONFIG`` of worker ``index`` in a cluster of ``addresses`` (``host:port``, worker 0 = chief)."""
    return json.dumps({"cluster": {"worker": list(addresses)}, "task": {"type": "worker", "index": int(index)}})


def _stream(source: TextIO, prefix: str, sink: TextIO, lock: threading.Lock) -> None:
    for line in iter(source.readline, ""):
        with lock:
            sink.write(prefix + line if line.endswith("\n") else prefix + line + "\n")
            sink.flush()
    source.close()


def _status(code: int) -> int:
    """A worker's return code as a shell exit status (killed by signal s: 128 + s)."""
    return 128 - code if code < 0 else code


def launch(
    command: Sequence[str],
    workers: int = 2,
    *,
    host: str = "127.0.0.1",
    ports: Sequence[int] | None = None,
    env: Mapping[str, str] | None = None,
    grace: float = 10.0,
    sink: TextIO | None = None,
) -> int:
    """Run ``command`` as ``workers`` processes with their ``TF_CONFIG``; returns the exit status (0 when
    every worker succeeded, else the first failure's status, after the other workers were stopped)."""
    if not command:
        raise ValueError("command: give the command to run after '--', e.g. -- python -m experiments.NAME ...")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    ports = list(ports) if ports is not None else free_ports(workers, host)
    if len(ports) != workers:
        raise ValueError(f"ports: {workers} workers need {workers} ports, got {len(ports)}")
    addresses = [f"{host}:{port}" for port in ports]
    sink = sink or sys.stdout
    lock = threading.Lock()
    processes: list[subprocess.Popen] = []
    threads: list[threading.Thread] = []
    base = dict(os.environ if env is None else env)
    base.setdefault("PYTHONUNBUFFERED", "1")
    for index in range(workers):
        worker_env: dict[str, str] = dict(base, TF_CONFIG=tf_config(addresses, index))
        process = subprocess.Popen(
            list(command),
            env=worker_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            errors="replace",
        )
        processes.append(process)
        thread = threading.Thread(target=_stream, args=(process.stdout, f"[worker {index}] ", sink, lock), daemon=True)
        thread.start()
        threads.append(thread)

    def stop_all(signum=signal.SIGTERM) -> None:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signum)
        deadline = time.monotonic() + grace
        for process in processes:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    status = 0
    try:
        while True:
            codes = [process.poll() for process in processes]
            failed = [(i, code) for i, code in enumerate(codes) if code not in (None, 0)]
            if failed:
                index, code = failed[0]
                status = _status(code)
                with lock:
                    sink.write(f"[launch] worker {index} exited with status {status}; stopping the others\n")
                    sink.flush()
                stop_all()
                break
            if all(code == 0 for code in codes):
                break
            time.sleep(0.1)
    except KeyboardInterrupt:
        stop_all(signal.SIGINT)
        status = 130
    for thread in threads:
        thread.join(timeout=5.0)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (``--workers``, ``--grace``, then ``--`` and the command); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    parser = argparse.ArgumentParser(
        prog="python -m gpflow_ext.training.launch",
        description="Run a command as W MultiWorkerMirroredStrategy workers on this machine (TF_CONFIG per "
        "worker, free ports, [worker i] log prefixes, one failure stops all).",
        epilog="example: python -m gpflow_ext.training.launch --workers 2 -- python -m experiments.NAME ...",
    )
    parser.add_argument("--workers", type=int, default=2, help="number of worker processes (default 2)")
    parser.add_argument("--host", default="127.0.0.1", help="address the workers listen on (default 127.0.0.1)")
    parser.add_argument("--ports", default=None, help="comma-separated ports, one per worker (default: free ones)")
    parser.add_argument("--cpu", action="store_true", help="hide GPUs from the workers (CUDA_VISIBLE_DEVICES=-1)")
    parser.add_argument(
        "--grace",
        type=float,
        default=10.0,
        help="seconds the other workers get to stop after one failed, before SIGKILL (default 10)",
    )
    args = parser.parse_args(argv)
    if not command:
        parser.error("give the command to run after '--'")
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    ports = None
    if args.ports is not None:
        try:
            ports = [int(p) for p in args.ports.split(",")]
        except ValueError:
            parser.error(f"--ports must be comma-separated integers, got {args.ports!r}")
        if len(ports) != args.workers:
            parser.error(f"--ports names {len(ports)} ports for --workers {args.workers}")
    env = dict(os.environ)
    if args.cpu:
        env["CUDA_VISIBLE_DEVICES"] = "-1"
    return launch(command, args.workers, host=args.host, ports=ports, env=env, grace=args.grace)


if __name__ == "__main__":
    sys.exit(main())
