"""Shim for tools that still call ``setup.py``; the metadata is in pyproject.toml."""
from setuptools import setup

setup()
