"""Checkpoints for :func:`gpflow_ext.training.fit` that never lose work.

* Every checkpoint stores a *fingerprint* of its run (model structure, data shapes and digest,
  batch size, shuffle, seed, optimizer configuration). A run resumes only from a checkpoint with
  the same fingerprint; another one is refused with a message naming each difference.
* Checkpoints are found from their ``ckpt-N.index`` files, not only from TensorFlow's
  ``checkpoint`` state file: a missing or garbled state file is rebuilt (the garbled one is kept
  beside it), so trained epochs are never rotated away by a run that started again from 0.
* Before restoring, every tensor of a checkpoint is read (TensorFlow verifies its checksum): an
  unreadable newest checkpoint (truncated, zeroed or bit-flipped data or index, deleted data file)
  is moved to ``unreadable/`` with a warning naming it, and the next older one is used. If none is
  readable the run refuses and names them.
* ``resume=False`` starts afresh after moving the existing checkpoints to ``previous-K/``; nothing
  is deleted except by the rotation of the run's own older checkpoints (``max_to_keep``).
"""

import hashlib
import json
import re
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import tensorflow as tf

from .errors import CheckpointMismatchError

__all__ = ["RunCheckpoints", "data_fingerprint", "fingerprint_differences", "check_folder", "RESUME_CHOICES"]

RESUME_CHOICES = ("auto", True, False)
_INDEX = re.compile(r"^ckpt-(\d+)\.index$")
_FINGERPRINT_KEY = "fingerprint/.ATTRIBUTES/VARIABLE_VALUE"


def check_folder(path: str | Path, name: str) -> Path:
    """``path`` as a folder that exists or can be created: a ``ValueError`` naming the argument ``name``
    when ``path`` or one of its parents is an existing regular file."""
    folder = Path(path)
    for place in (folder, *folder.parents):
        if place.exists():
            if not place.is_dir():
                where = "is" if place == folder else f"lies under {str(place)!r}, which is"
                raise ValueError(
                    f"{name}={str(path)!r} {where} an existing file, not a folder; "
                    f"pass the path of a folder (it is created if missing)"
                )
            break
    return folder


def data_fingerprint(arrays: Sequence[Any] | None) -> dict[str, Any]:
    """Shapes, dtypes and a blake2b digest of the training arrays (dense or CSR)."""
    if arrays is None:
        return {"data": "held by the model"}
    digest = hashlib.blake2b(digest_size=16)
    parts = []
    for array in arrays:
        if sp.issparse(array):
            array = sp.csr_matrix(array)
            for piece in (array.indptr, array.indices, array.data):
                digest.update(np.ascontiguousarray(piece).view(np.uint8))  # type: ignore[arg-type]  # ndarray is a buffer
            parts.append({"shape": list(array.shape), "dtype": str(array.dtype), "sparse": True})
        else:
            digest.update(np.ascontiguousarray(array).view(np.uint8).reshape(-1))  # type: ignore[arg-type]
            parts.append({"shape": list(array.shape), "dtype": str(array.dtype)})
    return {"parts": parts, "digest": digest.hexdigest()}


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            key = str(key)
            out.update(_flatten(item, f"{prefix}{'' if key.startswith('.') else '.'}{key}" if prefix else key))
        return out
    if isinstance(value, (list, tuple)) and value and any(isinstance(v, dict) for v in value):
        out = {}
        for i, item in enumerate(value):
            out.update(_flatten(item, f"{prefix}[{i}]"))
        return out
    return {prefix: value}


def fingerprint_differences(saved: dict[str, Any], now: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(key, saved value, current value)`` for every key that differs (missing shows as None)."""
    a, b = _flatten(saved), _flatten(now)
    return [(key, a.get(key), b.get(key)) for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key)]


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda v: v.item() if hasattr(v, "item") else str(v)))


def _discover(directory: Path) -> list[tuple[int, str]]:
    """``(N, prefix)`` of every ``ckpt-N`` in ``directory``, newest first."""
    if not directory.is_dir():
        return []
    found = [
        (int(m.group(1)), str(directory / f"ckpt-{m.group(1)}"))
        for m in (_INDEX.match(p.name) for p in directory.iterdir())
        if m
    ]
    return sorted(found, reverse=True)


def _files_of(prefix: str) -> list[Path]:
    path = Path(prefix)
    return [
        p
        for p in path.parent.glob(path.name + ".*")
        if p.name == path.name + ".index" or p.name.startswith(path.name + ".data-")
    ]


def _free_folder(directory: Path, stem: str) -> Path:
    k = 1
    while (directory / f"{stem}-{k}").exists():
        k += 1
    return directory / f"{stem}-{k}"


def _read_all(prefix: str) -> Any:
    """Read every tensor of a checkpoint (TensorFlow checks each one's crc32c); returns the reader."""
    reader = tf.train.load_checkpoint(prefix)
    for name in reader.get_variable_to_shape_map():
        reader.get_tensor(name)
    return reader


class RunCheckpoints:
    """The checkpoints of one ``fit`` run in ``directory``.

    :param checkpoint: a ``tf.train.Checkpoint`` holding the model, the optimizer state, the
        counters and the ``fingerprint`` / ``history`` string variables.
    :param fingerprint: this run's fingerprint (JSON-able dict).
    :param writer: whether this process writes (the chief under a multi-worker strategy).
    """

    def __init__(
        self,
        directory: str | Path,
        checkpoint: tf.train.Checkpoint,
        fingerprint_variable: tf.Variable,
        fingerprint: dict[str, Any],
        max_to_keep: int,
        writer: bool = True,
    ):
        self.directory = Path(directory)
        self.checkpoint = checkpoint
        self.fingerprint = _jsonable(fingerprint)
        fingerprint_variable.assign(json.dumps(self.fingerprint, sort_keys=True))
        self.max_to_keep = max_to_keep
        self.writer = writer
        self.manager: tf.train.CheckpointManager | None = None
        self.latest: str | None = None

    # ------------------------------------------------------------------ start of a run
    def restore(self, resume: str | bool) -> str | None:
        """Restore the newest readable checkpoint of this run (``resume`` ``"auto"``/``True``) or
        set the folder up for a fresh run (``False``). Returns the restored prefix or ``None``."""
        found = _discover(self.directory)
        if resume is False:
            if found and self.writer:
                moved = self._move_aside(found, _free_folder(self.directory, "previous"), also_state=True)
                print(f"fit: resume=False: moved the {len(found)} existing checkpoint(s) to {moved} (nothing deleted)")
            self._open_manager()
            return None
        if not found:
            if resume is True:
                raise ValueError(f"resume=True but there is no checkpoint (ckpt-N.index) in {self.directory}")
            self._open_manager()
            return None
        unreadable: list[tuple[int, str, str]] = []
        for number, prefix in found:
            try:
                reader = _read_all(prefix)
            except Exception as err:  # truncated / zeroed / bit-flipped / missing data: try an older one
                unreadable.append((number, prefix, f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"))
                continue
            self._check_fingerprint(prefix, reader)
            if unreadable:
                self._set_aside_unreadable(unreadable, prefix)
            self._open_manager()
            status = self.checkpoint.restore(prefix)
            try:
                status.assert_existing_objects_matched()
            except AssertionError as err:  # pragma: no cover - the fingerprint catches structure changes first
                raise ValueError(f"checkpoint {prefix} does not match this model/optimizer: {err}") from err
            self.latest = prefix
            return prefix
        names = "; ".join(f"{prefix} ({why})" for _, prefix, why in unreadable)
        raise ValueError(
            f"no checkpoint in {self.directory} is readable: {names}. Nothing was changed; pass "
            "Checkpointing(..., resume=False) to start a fresh run (the unreadable files are then moved to a "
            "previous-K folder, not deleted)"
        )

    def _check_fingerprint(self, prefix: str, reader: Any) -> None:
        if _FINGERPRINT_KEY not in reader.get_variable_to_shape_map():
            warnings.warn(
                f"checkpoint {prefix} has no run fingerprint (written by an older version); "
                "its structure is checked by the restore only",
                stacklevel=2,
            )
            return
        saved = json.loads(reader.get_tensor(_FINGERPRINT_KEY).decode())
        differences = fingerprint_differences(saved, self.fingerprint)
        if differences:
            raise CheckpointMismatchError(
                prefix,
                differences,
                f"Use another logdir/checkpoint_dir, or pass Checkpointing(..., resume=False) to start a fresh run "
                f"here (the existing checkpoints are then moved to {self.directory}/previous-K, not deleted).",
            )

    def _set_aside_unreadable(self, unreadable: list[tuple[int, str, str]], used: str) -> None:
        target = _free_folder(self.directory, "unreadable")
        for _number, prefix, why in unreadable:
            where = f"; moved to {target}" if self.writer else ""
            warnings.warn(
                f"checkpoint {prefix} is unreadable ({why}){where}; resuming from the older {used}", stacklevel=2
            )
        if self.writer:
            self._move_aside([(n, p) for n, p, _ in unreadable], target, also_state=False)

    def _move_aside(self, found: Sequence[tuple[int, str]], target: Path, also_state: bool) -> Path:
        target.mkdir(parents=True, exist_ok=True)
        for _, prefix in found:
            for path in _files_of(prefix):
                shutil.move(str(path), str(target / path.name))
        state = self.directory / "checkpoint"
        if also_state and state.exists():
            shutil.move(str(state), str(target / "checkpoint"))
        return target

    def _open_manager(self) -> None:
        """A CheckpointManager over the files actually present (the state file is rebuilt from them)."""
        if not self.writer:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        found = _discover(self.directory)
        state = self.directory / "checkpoint"
        listed: list[str] | None = None
        if state.exists():
            try:
                parsed = tf.train.get_checkpoint_state(str(self.directory))
                listed = [str(Path(p)) for p in parsed.all_model_checkpoint_paths] if parsed else None
            except Exception:
                listed = None
            if listed is None:
                kept = _free_folder(self.directory, "checkpoint.unreadable")
                shutil.move(str(state), str(kept))
                warnings.warn(
                    f"the checkpoint state file {state} is unreadable; kept it as {kept} and rebuilt it "
                    f"from the {len(found)} ckpt-N files present",
                    stacklevel=2,
                )
        present = [prefix for _, prefix in reversed(found)]  # oldest first
        if found:
            # every checkpoint on disk gets a timestamp after the "last preserved" one: the manager then
            # counts it for rotation (a state file without timestamps makes it forget them all)
            stamps = [Path(prefix + ".index").stat().st_mtime for prefix in present]
            stamps = [float(t) for t in np.maximum.accumulate(np.asarray(stamps) + 1e-6 * np.arange(len(stamps)))]
            tf.compat.v1.train.update_checkpoint_state(
                str(self.directory),
                present[-1],
                all_model_checkpoint_paths=present,
                all_model_checkpoint_timestamps=stamps,
                last_preserved_timestamp=min(stamps) - 1.0,
            )
        self.manager = tf.train.CheckpointManager(self.checkpoint, str(self.directory), max_to_keep=self.max_to_keep)

    # ------------------------------------------------------------------ during a run
    def save(self, number: int) -> str | None:
        """Write ``ckpt-number`` (the chief only; other workers write to a scratch folder, as
        ``tf.distribute`` needs every worker to take part in a save). Returns the prefix."""
        if not self.writer:
            with tempfile.TemporaryDirectory() as scratch:
                self.checkpoint.write(str(Path(scratch) / "ckpt"))
            return None
        existing = [p for p in _files_of(str(self.directory / f"ckpt-{number}"))]
        if existing:  # never overwrite: an older file of that name is moved aside first
            target = _free_folder(self.directory, "superseded")
            target.mkdir()
            for path in existing:
                shutil.move(str(path), str(target / path.name))
        assert self.manager is not None  # made above when the folder is first written
        self.latest = self.manager.save(checkpoint_number=number)
        return self.latest
