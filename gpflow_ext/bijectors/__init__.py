"""Normalising-flow bijectors (tfp) for GPLVF's q(X)."""

from .diagnostics import flow_local_nonlinearity
from .planar import Planar, flow_forward_and_log_det, planar_flow

__all__ = ["Planar", "planar_flow", "flow_forward_and_log_det", "flow_local_nonlinearity"]
