"""Every ``python`` block of README.md runs exactly as printed, each in a fresh interpreter in an empty folder.

The examples read real data through ``$GPFLOW_EXT_DATA`` (as a user's own setting would) and print their
figures; a block that raises, or prints a NaN, fails the test with its output.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks():
    text = README.read_text(encoding="utf-8")
    blocks = []
    for match in BLOCK.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        blocks.append(pytest.param(match.group(1), id=f"README.md:{line}"))
    return blocks


def test_readme_has_an_example_per_paper():
    sources = "\n".join(block.values[0] for block in python_blocks())
    for name in ("MLGPF", "SVDKL", "GPLVF", "fit("):
        assert name in sources, f"README.md has no runnable example using {name}"


@pytest.mark.parametrize("source", python_blocks())
def test_readme_example_runs_as_printed(source, data_dir, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3", GPFLOW_EXT_DATA=str(data_dir))
    done = subprocess.run([sys.executable, "-c", source], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"example failed:\n{source}\n--- output ---\n{output[-4000:]}"
    assert not re.search(r"\bnan\b", done.stdout, re.I), f"example printed NaN:\n{done.stdout}"
