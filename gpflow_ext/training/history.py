"""What :func:`gpflow_ext.training.fit` returns."""

import json
from dataclasses import asdict, dataclass, field

import numpy as np

__all__ = ["History"]

_RECORDED = ("epochs", "objective", "seconds_per_epoch", "steps", "metrics", "metric_epochs")


@dataclass
class History:
    """Per-epoch record of a training run, across resumes: a resumed ``fit`` call starts from the
    epochs stored in its checkpoint, so ``objective`` always covers epochs 1..last.

    * ``epochs`` -- 1-based epoch numbers;
    * ``objective`` -- mean minibatch objective (``model.training_loss``) over each epoch;
    * ``seconds_per_epoch`` -- wall-clock seconds of the training steps of each epoch (the first
      epoch of each call includes tracing; monitoring, metrics and checkpoint writing excluded);
    * ``steps`` -- global update count at the end of each epoch;
    * ``metrics`` -- ``{name: [value per evaluation]}`` taken at ``metric_epochs``;
    * ``start_epoch`` -- epochs already done when this call began (restored from ``resumed_from``).
    """

    epochs: list[int] = field(default_factory=list)
    objective: list[float] = field(default_factory=list)
    seconds_per_epoch: list[float] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    metrics: dict[str, list[float]] = field(default_factory=dict)
    metric_epochs: list[int] = field(default_factory=list)
    steps_per_epoch: int = 0
    start_epoch: int = 0
    resumed_from: str | None = None
    last_checkpoint: str | None = None
    logdir: str | None = None

    @property
    def final_objective(self) -> float:
        return self.objective[-1] if self.objective else float("nan")

    @property
    def trained_epochs(self) -> list[int]:
        """The epochs trained by this call (not restored)."""
        return [e for e in self.epochs if e > self.start_epoch]

    def median_seconds_per_epoch(self, skip_first: bool = True) -> float:
        """Median over the epochs trained by this call, skipping its first one (tracing) when there
        are others."""
        times = [s for e, s in zip(self.epochs, self.seconds_per_epoch) if e > self.start_epoch]
        times = times[1:] if skip_first and len(times) > 1 else times
        return float(np.median(times)) if times else float("nan")

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    def to_json(self) -> str:
        """The recorded curves (what a checkpoint stores)."""
        return json.dumps({key: getattr(self, key) for key in _RECORDED})

    def restore_json(self, text: str) -> None:
        """Take the recorded curves from :meth:`to_json` output (empty text: nothing recorded)."""
        if not text:
            return
        recorded = json.loads(text)
        for key in _RECORDED:
            setattr(self, key, recorded.get(key, getattr(self, key)))
