"""Normalising-flow bijectors (tfp) for GPLVF's q(X)."""
from .planar import Planar, planar_flow, flow_forward_and_log_det
from .diagnostics import flow_local_nonlinearity

__all__ = ["Planar", "planar_flow", "flow_forward_and_log_det", "flow_local_nonlinearity"]
