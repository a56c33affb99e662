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

Arrays (the eager fallback's NumPy-semantics Tensors) carry tangents the same way; their
tangents are plain Tensors, out of the Arrays' own bookkeeping of views.

Costs one flag check outside a level: :func:`srcgrad.runtime.eager.tensor.apply` calls
``tensor._forward_hook`` only while a level is open, and the three places that write in place
(``views.inplace``, ``views._setitem``, ``methods._inplace_method``) call :func:`lend_tangent`,
:func:`write_tangent` or :func:`write_item` only then.  A custom ``Function`` gives its
outputs the tangents of its ``jvp`` (:mod:`srcgrad.runtime.eager.function`).
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np

from srcgrad.runtime.eager import grad_mode
from srcgrad.runtime.eager import tensor as _tensor
from srcgrad.runtime.eager.node import TANGENTS
from srcgrad.runtime.eager.tensor import Tensor

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
    check_size(tensor, tangent)
    if tangent_of(tensor) is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {level} is not supported.")
    with paused():
        dual = same_view(tensor)
        if type(tangent) is not Tensor:     # an Array: tangents are plain Tensors
            tangent = Tensor.reshape(tangent, tangent._data.shape)
    set_tangent(dual, tangent, root=True)
    return dual


def check_size(tensor: Tensor, tangent: Tensor) -> None:
    """Refuse a tangent whose shape is not the Tensor's, with PyTorch's message."""
    if tangent._data.shape != tensor._data.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size "
            f"{list(tensor._data.shape)} while the given forward gradient is of size "
            f"{list(tangent._data.shape)}.")


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)``: a view of ``tensor`` without tangent, and its tangent or None."""
    level = _level if level is None else level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual expects a Tensor, got {type(tensor).__name__}")
    # no tangent while propagation is paused: in a custom Function's forward and jvp, as PyTorch
    tangent = tangent_of(tensor) if level == _level and _tensor._forward_hook is not None else None
    with paused():
        primal = same_view(tensor)
    set_tangent(primal, None, root=True)
    return UnpackedDualTensor(primal, tangent)


def same_view(t: Tensor) -> Tensor:
    """A view of all of ``t``: a Tensor, or an Array for an Array (a view whose writes the
    engine follows, where ``Array.reshape`` makes one it refuses to write through)."""
    from srcgrad.runtime.eager.ndarray import Array
    view = Tensor.reshape(t, t._data.shape)
    if isinstance(t, Array):
        view.__class__ = Array
    return view


# ---------------------------------------------------------------------------------------------
# The tangent table.

def tangent_of(t: Tensor) -> Tensor | None:
    """``t``'s tangent at the open level, or None."""
    entry = _tangents.get(id(t))
    return entry[1] if entry is not None and entry[0]() is t else None


def _is_root(t: Tensor) -> bool:
    entry = _tangents.get(id(t))
    return entry is not None and entry[0]() is t and entry[2]


def set_tangent(t: Tensor, tangent: Tensor | None, root: bool = False) -> None:
    """Make ``tangent`` ``t``'s (None: none); a root does not pass its writes to its base."""
    key = id(t)
    _tangents[key] = (weakref.ref(t, functools.partial(_forget, key)), tangent, root)


TANGENTS.update(of=tangent_of, set=set_tangent)


def _forget(key: int, ref: weakref.ref) -> None:
    entry = _tangents.get(key)
    if entry is not None and entry[0] is ref:
        del _tangents[key]


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Operations on Tensors without tangent propagation (the forward rules themselves, a
    custom Function's forward and jvp), and without tangents for ``unpack_dual``."""
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
    tangents = [tangent_of(a) if isinstance(a, Tensor) else None for a in args]
    if result._data.dtype.kind not in "fc" or all(t is None for t in tangents):
        return
    _tensor._forward_hook = None
    try:
        tangent = prim.jvp(tangents, result, *args, **params)
        if tangent is not None:
            set_tangent(result, _fitted(tangent, result, args, tangents))
            node = result._grad_fn                 # a backward that reads the output sees it
            if getattr(node, "ans", None) is not None:
                node.ans_tangent = tangent_of(result)
    finally:
        _tensor._forward_hook = _propagate


def _fitted(tangent: Any, result: Tensor, args: tuple, tangents: list) -> Tensor:
    """The rule's tangent as a Tensor of ``result``'s shape and dtype, owning its memory
    unless ``result`` is a view (then it is the same view of the input's tangent)."""
    if not isinstance(tangent, Tensor):
        tangent = Tensor._make(tangent)
    elif type(tangent) is not Tensor:  # an Array (the rule ran on Arrays): a plain Tensor
        if tangent._base is None:
            tangent.__class__ = Tensor
        else:
            tangent = Tensor.clone(tangent)
    data = result._data
    if tangent._data.dtype != data.dtype:
        tangent = tangent.to(Tensor.dtype.fget(result))      # an Array says NumPy's dtype
    if tangent._data.shape != data.shape:
        return tangent.expand(*data.shape).clone()
    if not _writable(tangent._data) or any(
            t is not None and np.may_share_memory(tangent._data, t._data)
            and not np.may_share_memory(data, a._data) for a, t in zip(args, tangents)):
        tangent = tangent.clone()       # never share a tangent with an unrelated Tensor
    return tangent


def link_view(view: Tensor) -> None:
    """Called when ``view`` was made a view of ``view._base``: its tangent, which the rule made
    the same view of the base's tangent, is recorded as that view too, so that a write through
    it is recorded into the base's tangent (for reverse over forward) as the write into the
    value is recorded into the base."""
    mine, theirs = tangent_of(view), tangent_of(view._base)
    if mine is not None and theirs is not None and mine._base is None and \
            np.shares_memory(mine._data, theirs._data):
        mine._base, mine._view_key = theirs, view._view_key
        mine._version_counter = theirs._version_counter


# ---------------------------------------------------------------------------------------------
# In-place writes.  The three writers (``views.inplace``, ``views._setitem`` and the methods of
# ``methods._inplace_method``) call these while a level is open: the in-place operation runs
# on ``old``, a snapshot of the Tensor written, which is lent the Tensor's tangent, so the
# operation computes the new tangent as it computes the new value; it is then written into
# the Tensor's tangent, in place.

def lend_tangent(self: Tensor, old: Tensor, args: Iterable[Any]) -> None:
    """Before ``self`` is written with an operation on ``old`` and ``args``: ``old`` carries
    ``self``'s tangent."""
    mine = tangent_of(self)
    theirs = [tangent_of(a) for a in args if isinstance(a, Tensor)]
    if mine is None and all(t is None for t in theirs):
        return
    if grad_mode.is_grad_enabled() and any(
            t is not None and t._requires_grad for t in (old, mine, *args, *theirs)
            if isinstance(t, Tensor)):
        old._data = old._data.copy()     # the tangent's nodes may keep the old value ...
        if mine is not None:
            mine = mine.clone()          # ... or the old tangent, which is written below
    if mine is not None:
        set_tangent(old, mine)


def write_tangent(self: Tensor, result: Tensor) -> None:
    """After ``self`` was written with the value of ``result``: its tangent is ``result``'s."""
    new = tangent_of(result)
    if new is not None or tangent_of(self) is not None:
        with paused():
            write(self, new)


def write_item(self: Tensor, index: Any, value: Any) -> None:
    """After ``self[index] = value``: the same write into the tangents."""
    mine = tangent_of(self)
    theirs = tangent_of(value) if isinstance(value, Tensor) else None
    if mine is None and theirs is None:
        return
    with paused():
        new = mine.clone() if mine is not None else Tensor._make(np.zeros_like(self._data))
        new[index] = theirs if theirs is not None else 0
        write(self, new)


def write(t: Tensor, new: Tensor | None) -> None:
    """After an in-place write to ``t``, its tangent is ``new`` (None: zero).

    It is written into ``t``'s tangent (so the views of that tangent see it) and, unless ``t``
    is a root, into the tangent of the Tensor ``t`` is a view of, which gets a zero tangent
    first when it has none (``base[:2].add_(dual)`` makes ``base`` dual), and so on up.
    """
    data = t._data
    new = Tensor._make(np.zeros_like(data)) if new is None else new
    current = tangent_of(t)
    if current is new:
        pass                            # written in place already (a custom Function's jvp)
    elif current is not None and current._data.shape == data.shape and \
            _writable(current._data):
        current.copy_(new)
    else:
        current = new.to(Tensor.dtype.fget(t)).expand(*data.shape).clone()
        set_tangent(t, current, _is_root(t))
    while t._base is not None and not _is_root(t):
        base, (kind, key) = t._base, t._view_key
        base_tangent = tangent_of(base)
        if base_tangent is not None and np.shares_memory(base_tangent._data, current._data):
            return                      # the write went through a view of the base's tangent
        if base_tangent is None or not _writable(base_tangent._data):
            base_tangent = (Tensor._make(np.zeros_like(base._data)) if base_tangent is None
                            else base_tangent.clone())
            set_tangent(base, base_tangent, _is_root(base))
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
            set_tangent(t, region, _is_root(t))
        t, current, data = base, base_tangent, base._data
