"""Forward-mode AD for the eager engine: PyTorch's ``torch.autograd.forward_ad``.

Inside a ``dual_level``, ``make_dual(x, t)`` gives a Tensor that carries the tangent ``t``.
Every operation on it runs the primitive's forward rule (:meth:`Primitive.jvp`) beside the
value, so its result carries a tangent too; ``unpack_dual`` reads it back::

    with dual_level():
        y = f(make_dual(x, v))
        value, jv = unpack_dual(y)

As in PyTorch:

- one level at a time (no nesting); leaving it forgets every tangent;
- tangents are Tensors, computed by the engine itself, so they are differentiable (backward
  through a tangent gives forward-over-reverse and reverse-over-forward derivatives);
- a view's tangent is the same view of its base's tangent, and an in-place write updates the
  tangent of the Tensor written to (in place: the views of that tangent see it) and of the
  Tensors it is a view of.

Costs nothing outside a level: :func:`srcgrad.runtime.tensor.apply` calls ``_forward_hook``
only while a level is open, and the in-place methods are wrapped only while it is open.
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from srcgrad.runtime import grad_mode
from srcgrad.runtime import tensor as _tensor
from srcgrad.runtime.tensor import Tensor

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level",
           "make_dual", "unpack_dual"]

NO_LEVEL = ("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first.")
NESTED = "Nested forward mode AD is not supported at the moment"

_level = -1
"""The open dual level (0), or -1 outside any."""

_tangents: dict[int, tuple[weakref.ref, Tensor | None, bool]] = {}
"""``id(t)`` → (a weak reference to ``t``, its tangent, whether ``t`` is a root).  A root
(``make_dual``'s result, ``unpack_dual``'s primal) does not pass writes to the Tensor it is
a view of.  An entry goes with its Tensor, and all of them with the level."""

_MISSING = object()


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the value, and its tangent (None when it has none)."""

    primal: Any
    tangent: Tensor | None


# ---------------------------------------------------------------------------------------------
# Levels.

def enter_dual_level() -> int:
    """Open a dual level (only one at a time, as in PyTorch) and return it."""
    global _level
    if _level >= 0:
        raise RuntimeError(NESTED)
    _install_inplace()
    _tensor._forward_hook = _propagate
    _level = 0
    return _level


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the dual level: every tangent of it is forgotten."""
    global _level
    level = _level if level is None else level
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if level != _level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    _tensor._forward_hook = None
    _uninstall_inplace()
    _tangents.clear()
    _level = -1


class dual_level(contextlib.ContextDecorator):  # noqa: N801  (PyTorch's name)
    """Context manager (or decorator) inside which dual Tensors carry their tangents."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level()


# ---------------------------------------------------------------------------------------------
# Dual Tensors.

def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` that carries ``tangent`` (kept as given, not copied) at the level."""
    level = _level if level is None else level
    if level < 0:
        raise RuntimeError(NO_LEVEL)
    if level != _level:
        raise RuntimeError("Invalid level given to _make_dual")
    for what, t in (("primal", tensor), ("tangent", tangent)):
        if not isinstance(t, Tensor):
            raise TypeError(f"make_dual expects the {what} to be a Tensor, got "
                            f"{type(t).__name__}")
        if t._data.dtype.kind not in "fc":
            raise ValueError(f"Expected {what} to be floating point or complex, but got: "
                             f"{t.dtype}")
    if tangent._data.shape != tensor._data.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}.")
    if _get(tensor) is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {level} is not supported.")
    with _paused():
        dual = tensor.reshape(tensor._data.shape)
    _set(dual, tangent, root=True)
    return dual


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)``: a view of ``tensor`` without tangent, and its tangent or None."""
    level = _level if level is None else level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual expects a Tensor, got {type(tensor).__name__}")
    tangent = _get(tensor) if level == _level else None
    with _paused():
        primal = tensor.reshape(tensor._data.shape)
    _set(primal, None, root=True)
    return UnpackedDualTensor(primal, tangent)


# ---------------------------------------------------------------------------------------------
# The tangent table.

def _get(t: Tensor) -> Tensor | None:
    entry = _tangents.get(id(t))
    return entry[1] if entry is not None and entry[0]() is t else None


def _is_root(t: Tensor) -> bool:
    entry = _tangents.get(id(t))
    return entry is not None and entry[0]() is t and entry[2]


def _set(t: Tensor, tangent: Tensor | None, root: bool = False) -> None:
    key = id(t)
    _tangents[key] = (weakref.ref(t, functools.partial(_forget, key)), tangent, root)


def _forget(key: int, ref: weakref.ref) -> None:
    entry = _tangents.get(key)
    if entry is not None and entry[0] is ref:
        del _tangents[key]


@contextlib.contextmanager
def _paused() -> Any:
    """Operations on Tensors without tangent propagation: the forward rules themselves."""
    hook = _tensor._forward_hook
    _tensor._forward_hook = None
    try:
        yield
    finally:
        _tensor._forward_hook = hook


def _writable(a: Any) -> bool:
    return getattr(a.flags, "writeable", True)


# ---------------------------------------------------------------------------------------------
# Propagation: the hook in ``apply``.

def _propagate(prim: Any, args: tuple, params: dict, result: Tensor) -> None:
    """Give ``result = prim(*args, **params)`` its tangent, if an input has one."""
    tangents = [_get(a) if isinstance(a, Tensor) else None for a in args]
    if result._data.dtype.kind not in "fc" or all(t is None for t in tangents):
        return
    _tensor._forward_hook = None
    try:
        tangent = prim.jvp(tangents, result, *args, **params)
        if tangent is not None:
            _set(result, _fitted(tangent, result, args, tangents))
    finally:
        _tensor._forward_hook = _propagate


def _fitted(tangent: Any, result: Tensor, args: tuple, tangents: list) -> Tensor:
    """The rule's tangent as a Tensor of ``result``'s shape and dtype, owning its memory
    unless ``result`` is a view (then it is the same view of the input's tangent)."""
    if not isinstance(tangent, Tensor):
        tangent = Tensor._make(tangent)
    data = result._data
    if tangent._data.dtype != data.dtype:
        tangent = tangent.to(result.dtype)
    if tangent._data.shape != data.shape:
        return tangent.expand(*data.shape).clone()
    if not _writable(tangent._data) or any(
            t is not None and np.may_share_memory(tangent._data, t._data)
            and not np.may_share_memory(data, a._data) for a, t in zip(args, tangents)):
        tangent = tangent.clone()       # never share a tangent with an unrelated Tensor
    return tangent


# ---------------------------------------------------------------------------------------------
# In-place writes: each in-place method computes the new tangent, then writes it.

def _write(t: Tensor, new: Tensor | None) -> None:
    """After an in-place write to ``t``, its tangent is ``new`` (None: zero).

    It is written into ``t``'s tangent (so the views of that tangent see it) and, unless ``t``
    is a root, into the tangent of the Tensor ``t`` is a view of, which gets a zero tangent
    first when it has none (``base[:2].add_(dual)`` makes ``base`` dual), and so on up.
    """
    data = t._data
    new = Tensor._make(np.zeros_like(data)) if new is None else new
    current = _get(t)
    if current is not None and current._data.shape == data.shape and _writable(current._data):
        current.copy_(new)
    else:
        current = new.to(t.dtype).expand(*data.shape).clone()
        _set(t, current, _is_root(t))
    while t._base is not None and not _is_root(t):
        base, (kind, key) = t._base, t._view_key
        base_tangent = _get(base)
        if base_tangent is not None and np.shares_memory(base_tangent._data, current._data):
            return                      # the write went through a view of the base's tangent
        if base_tangent is None or not _writable(base_tangent._data):
            base_tangent = (Tensor._make(np.zeros_like(base._data)) if base_tangent is None
                            else base_tangent.clone())
            _set(base, base_tangent, _is_root(base))
        if kind == "index":
            base_tangent[key] = current
            region = base_tangent[key]
        elif kind == "transpose":
            base_tangent.copy_(current.permute(*np.argsort(key).tolist()))
            region = base_tangent.permute(*key)
        elif kind == "reshape":
            base_tangent.copy_(current.reshape(base._data.shape))
            region = base_tangent.reshape(data.shape)
        else:
            raise RuntimeError(f"forward AD does not follow a write through a {kind} view: "
                               "take a copy first")
        if np.shares_memory(region._data, base_tangent._data):
            _set(t, region, _is_root(t))
        t, current, data = base, base_tangent, base._data


def _tangent_of_outplace(stem: str) -> Callable:
    """``x.foo_(...)``'s new tangent: that of ``x.foo(...)``."""
    def rule(self: Tensor, *args: Any, **kwargs: Any) -> Tensor | None:
        return _get(getattr(Tensor, stem)(self, *args, **kwargs))
    return rule


def _tangent_of_value(self: Tensor, value: Any, *_: Any, **__: Any) -> Tensor | None:
    return _get(value) if isinstance(value, Tensor) else None   # copy_(src), fill_(value)


def _tangent_of_setitem(self: Tensor, index: Any, value: Any) -> Tensor:
    mine = _get(self)
    new = mine.clone() if mine is not None else Tensor._make(np.zeros_like(self._data))
    theirs = _get(value) if isinstance(value, Tensor) else None
    new[index] = theirs if theirs is not None else 0
    return new


_SPECIAL: dict[str, Callable] = {"copy_": _tangent_of_value, "fill_": _tangent_of_value,
                                 "zero_": lambda self: None,
                                 "__setitem__": _tangent_of_setitem}
_NOT_WRITES = frozenset({"requires_grad_", "detach_"})


def _inplace_rules() -> dict[str, Callable | None]:
    """Every in-place method of Tensor → the rule for its new tangent (None: unknown)."""
    rules: dict[str, Callable | None] = dict(_SPECIAL)
    for name in dir(Tensor):
        if name.endswith("_") and not name.startswith("_") and name not in _NOT_WRITES:
            stem = name[:-1]
        elif name.startswith("__i") and name.endswith("__") and hasattr(Tensor, f"__{name[3:]}"):
            stem = f"__{name[3:]}"
        else:
            continue
        if name not in rules:
            rules[name] = _tangent_of_outplace(stem) if hasattr(Tensor, stem) else None
    return rules


def _dual_inplace(name: str, method: Callable, rule: Callable | None) -> Callable:
    @functools.wraps(method)
    def dual_method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        if _tensor._forward_hook is None or (_get(self) is None and not any(
                isinstance(a, Tensor) and _get(a) is not None
                for a in (*args, *kwargs.values()))):
            return method(self, *args, **kwargs)
        if rule is None:
            raise NotImplementedError(f"Tensor.{name} on a dual Tensor: srcgrad's forward AD "
                                      "does not know its tangent; use the out-of-place form")
        source = self
        mine = _get(self)
        if grad_mode.is_grad_enabled() and (self._requires_grad or (
                mine is not None and mine._requires_grad)):
            source = self.clone()       # what the rule saves for backward is not written
        new = rule(source, *args, **kwargs)
        with _paused():
            out = method(self, *args, **kwargs)
            _write(self, new)
        return out
    return dual_method


_rules: dict[str, Callable | None] = {}
_wrapped: dict[str, tuple[Any, Callable]] = {}
"""In-place method name → (the method, its wrapper): made once, remade if it is replaced."""


def _install_inplace() -> None:
    if not _rules:
        _rules.update(_inplace_rules())
    for name, rule in _rules.items():
        current = Tensor.__dict__.get(name, _MISSING)
        entry = _wrapped.get(name)
        if entry is None or entry[0] is not current:
            entry = _wrapped[name] = (current, _dual_inplace(name, getattr(Tensor, name), rule))
        setattr(Tensor, name, entry[1])


def _uninstall_inplace() -> None:
    for name, (method, _) in _wrapped.items():
        if method is _MISSING:
            delattr(Tensor, name)
        else:
            setattr(Tensor, name, method)
