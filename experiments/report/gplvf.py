"""Generated parts of the gplvf pages (see experiments.report)."""
from experiments.report import fmt, generator, load, markdown_table  # noqa: F401
