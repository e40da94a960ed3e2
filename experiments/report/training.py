"""Generated parts of the training pages (see experiments.report)."""
from experiments.report import fmt, generator, load, markdown_table  # noqa: F401
