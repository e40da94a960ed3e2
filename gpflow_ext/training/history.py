"""What :func:`gpflow_ext.training.fit` returns."""
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np


@dataclass
class History:
    """Per-epoch record of one ``fit`` call (epochs restored from a checkpoint are not repeated).

    * ``epochs`` -- 1-based numbers of the epochs trained in this call;
    * ``objective`` -- mean minibatch objective (``model.training_loss``) over each epoch;
    * ``seconds_per_epoch`` -- wall-clock seconds of the training steps of each epoch (the first one
      includes tracing/compilation; monitoring, metrics and checkpoint writing are excluded);
    * ``steps`` -- global update count at the end of each epoch;
    * ``metrics`` -- ``{name: [value per evaluation]}`` and ``metric_epochs`` the epochs they were taken at.
    """

    epochs: List[int] = field(default_factory=list)
    objective: List[float] = field(default_factory=list)
    seconds_per_epoch: List[float] = field(default_factory=list)
    steps: List[int] = field(default_factory=list)
    metrics: Dict[str, List[float]] = field(default_factory=dict)
    metric_epochs: List[int] = field(default_factory=list)
    steps_per_epoch: int = 0
    start_epoch: int = 0
    resumed_from: Optional[str] = None
    last_checkpoint: Optional[str] = None
    logdir: Optional[str] = None

    @property
    def final_objective(self) -> float:
        return self.objective[-1] if self.objective else float("nan")

    def median_seconds_per_epoch(self, skip_first: bool = True) -> float:
        """Median over epochs, skipping the first one (tracing) when there are others."""
        times = self.seconds_per_epoch[1:] if skip_first and len(self.seconds_per_epoch) > 1 else self.seconds_per_epoch
        return float(np.median(times)) if times else float("nan")

    def as_dict(self) -> Dict[str, object]:
        return {
            "epochs": list(self.epochs),
            "objective": list(self.objective),
            "seconds_per_epoch": list(self.seconds_per_epoch),
            "steps": list(self.steps),
            "metrics": {k: list(v) for k, v in self.metrics.items()},
            "metric_epochs": list(self.metric_epochs),
            "steps_per_epoch": self.steps_per_epoch,
            "start_epoch": self.start_epoch,
            "resumed_from": self.resumed_from,
            "last_checkpoint": self.last_checkpoint,
            "logdir": self.logdir,
        }
