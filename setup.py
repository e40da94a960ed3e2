"""Installs gpflow_ext; the pinned, tested stack is in requirements.txt."""
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent


def _requirements():
    lines = (HERE / "requirements.txt").read_text().splitlines()
    return [ln.split("#")[0].strip() for ln in lines if ln.split("#")[0].strip()]


setup(
    name="gpflow_ext",
    version="0.1.0",
    description=(
        "GPflow 2 extensions: subspace inducing inputs and MLGPF, SV-DKL with KISS-GP grids, "
        "and GP latent variable flows"
    ),
    long_description=(HERE / "README.md").read_text(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["gpflow_ext", "gpflow_ext.*"]),
    python_requires=">=3.10,<3.13",
    install_requires=_requirements(),
)
