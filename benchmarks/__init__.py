"""Side-by-side timings against peers, run as ``python -m benchmarks.NAME`` from the repository root."""
