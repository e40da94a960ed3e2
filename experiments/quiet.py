"""TensorFlow without its log lines: every script in experiments/ and benchmarks/ imports this first.

Importing it (before TensorFlow is imported anywhere)

* sets ``TF_CPP_MIN_LOG_LEVEL`` to 3 unless the environment already sets it: TensorFlow's C++
  info, warning and error lines (``oneDNN custom operations``, ``cuda``, ``cuInit``, grappler's
  ``Not handling type DT_DOUBLE``) are not printed; a failing operation still raises its Python
  exception with the message;
* imports TensorFlow (where installed) with standard error's file descriptor pointed at the null
  device, because a few lines (``All log messages before absl::InitializeLog()``, oneDNN, cudart)
  are written while the library loads, before it reads that variable; a Python exception raised by
  the import still propagates and is printed;
* sets the ``tensorflow`` and ``absl`` Python loggers to ERROR (AutoGraph and retracing warnings).

``TF_CPP_MIN_LOG_LEVEL=0 python -m experiments.tour`` shows everything again (no redirection then).
Scripts that run under the peers interpreter (no TensorFlow) do not import this module.
"""
import importlib.util
import logging
import os
import sys

LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"


def _import_tensorflow_silently() -> None:
    """``import tensorflow`` with file descriptor 2 on the null device for the duration of the import."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        import tensorflow  # noqa: F401
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def quiet_tensorflow() -> None:
    """Apply the settings above; safe to call more than once and where TensorFlow is absent."""
    os.environ.setdefault(LEVEL_VARIABLE, "3")
    for name in ("tensorflow", "absl"):
        logging.getLogger(name).setLevel(logging.ERROR)
    quiet = os.environ[LEVEL_VARIABLE].strip() not in ("", "0")
    if quiet and "tensorflow" not in sys.modules and importlib.util.find_spec("tensorflow") is not None:
        _import_tensorflow_silently()


quiet_tensorflow()
