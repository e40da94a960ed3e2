"""Deprecation shims: old names keep working for one release, with a ``DeprecationWarning``.

* :func:`deprecated_alias` wraps a function or class under its old name;
* :func:`moved_names` builds a module ``__getattr__`` that serves names which moved to another module;
* :func:`renamed_method` is a class attribute that forwards an old method name to the new one.
"""
import functools
import importlib
import warnings
from typing import Any, Callable, Dict

REMOVED_IN = "0.3"


def _warn(old: str, new: str, stacklevel: int = 3) -> None:
    warnings.warn(
        f"{old} is deprecated and will be removed in gpflow_ext {REMOVED_IN}; use {new} instead.",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def deprecated_alias(target: Callable, old: str, new: str) -> Callable:
    """``target`` under the name ``old``: calling it warns that ``new`` replaces it."""
    if isinstance(target, type):
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            _warn(old, new)
            target.__init__(self, *args, **kwargs)

        return type(target.__name__, (target,), {"__init__": __init__, "__doc__": target.__doc__,
                                                  "__module__": target.__module__})

    @functools.wraps(target)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _warn(old, new)
        return target(*args, **kwargs)

    return wrapper


def moved_names(module_name: str, moves: Dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving ``moves = {old_name: "new.module:new_name"}`` with a warning."""

    def __getattr__(name: str) -> Any:
        if name not in moves:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        new_module, _, new_name = moves[name].partition(":")
        _warn(f"{module_name}.{name}", f"{new_module}.{new_name}")
        return getattr(importlib.import_module(new_module), new_name)

    return __getattr__


class renamed_method:
    """``old = renamed_method("new")`` in a class body: ``obj.old(...)`` warns and calls ``obj.new(...)``."""

    def __init__(self, new_name: str):
        self.new_name = new_name
        self.old_name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.old_name = name
        self.owner_name = owner.__name__

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        _warn(f"{self.owner_name}.{self.old_name}", f"{self.owner_name}.{self.new_name}", stacklevel=2)
        return getattr(obj, self.new_name)


class moved_attribute:
    """``old = moved_attribute(lambda obj: ..., "new place")`` in a class body: reading ``obj.old`` warns and returns
    the getter's value (an attribute or method that moved to a part of ``obj``)."""

    def __init__(self, getter: Callable[[Any], Any], new: str):
        self.getter = getter
        self.new = new
        self.old_name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.old_name = f"{owner.__name__}.{name}"

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        _warn(self.old_name, self.new, stacklevel=2)
        return self.getter(obj)
