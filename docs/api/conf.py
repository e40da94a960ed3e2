"""Sphinx configuration of the gpflow_ext API reference (``sphinx-build -W -b html docs/api <out>``)."""

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import gpflow_ext  # noqa: E402

project = "gpflow_ext"
author = "gpflow_ext authors"
copyright = "gpflow_ext authors, Apache-2.0"
release = gpflow_ext.__version__
version = release

extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
# the recipe modules are listed from the package itself (docs/api/_autosummary is generated, not kept)
autosummary_generate = True

# The public API of a subpackage is its ``__all__``; its members are documented where users import them.
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# overrides of TensorFlow and GPflow methods keep their own (or no) docstring: the inherited ones are not reST
autodoc_inherit_docstrings = False
napoleon_google_docstring = True
napoleon_numpy_docstring = True

exclude_patterns = ["_build", "README.md"]
html_theme = "alabaster"
html_static_path: list[str] = []
html_title = f"gpflow_ext {release} API reference"
