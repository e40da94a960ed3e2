"""Generated parts of the mlgpf pages (see experiments.report)."""
from experiments.report import fmt, generator, load, markdown_table  # noqa: F401
