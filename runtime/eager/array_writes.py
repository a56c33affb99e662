"""Writes into Arrays (:mod:`srcgrad.runtime.eager.ndarray`) with NumPy's semantics.

NumPy lets a function write into an array after an operation read it (``probs /= probs.sum(
axis=1, keepdims=True)`` after ``probs = np.exp(z)``); PyTorch refuses that at backward time,
as its nodes keep the very Tensor they read.  For Arrays, a node keeps an *alias* instead (the
same data, graph position and version counter, :func:`saved_alias`), and a write into an Array
whose data a node keeps first moves the Array onto a copy of its data with a version counter
of its own (:func:`own_data`): the nodes go on reading the values they read.  Views of the
Array taken before the write are marked stale (NumPy would show them the write; using them is
refused), and an Array whose memory NumPy was handed as a plain array, or that is itself a
view, is written in place as before (the engine refuses a write into what a node keeps).
Inside a dual level (forward mode) nothing moves: tangents are written in place too.

Also the tables the Array's checks read: which Arrays share memory (views and bases) and at
which version, and which were handed to NumPy as plain arrays.
"""

from __future__ import annotations

import weakref
from typing import Any

from srcgrad.runtime.eager import tensor as _tensor
from srcgrad.runtime.eager.tensor import Tensor

__all__ = ["remember", "note", "check_current", "check_writable", "written", "escaped",
           "saved_alias", "own_data", "kept", "CURRENT", "ESCAPED"]

# Arrays that share memory (views and their bases), with the version of the shared data their
# graph describes: one written after a view was taken is stale, and using it is refused.
CURRENT: dict[int, tuple[Any, Any]] = {}
# Arrays whose memory NumPy was handed as a plain array (np.asarray(a) is a's memory).
ESCAPED: dict[int, tuple[Any, Any]] = {}
# Data buffers (ndarrays) that a node keeps to read at backward time.
_KEPT: dict[int, tuple[Any, Any]] = {}
_STALE = -1


def remember(table: dict, obj: Any, version: Any) -> None:
    """``table[id(obj)]``: a weak reference to ``obj`` (and ``version``), gone with ``obj``."""
    key = id(obj)
    table[key] = (weakref.ref(obj, lambda _, k=key: table.pop(k, None)), version)


def _entry(table: dict, obj: Any) -> Any:
    entry = table.get(id(obj))
    return entry if entry is not None and entry[0]() is obj else None


def note(t: Tensor) -> None:
    remember(CURRENT, t, t._version_counter[0])


def escaped(t: Tensor) -> bool:
    return _entry(ESCAPED, t) is not None


def check_current(t: Any) -> None:
    entry = _entry(CURRENT, t) if isinstance(t, Tensor) else None
    if entry is not None and entry[1] != t._version_counter[0]:
        raise RuntimeError(
            "an array was written in place after this view of it was taken (or this view "
            "after the array): NumPy shows the write through both, which srcgrad's eager run "
            "does not follow; take a copy (.copy()) before writing")


def check_writable(t: Tensor, value: Any = None) -> None:
    check_current(t)
    flags = getattr(t._data, "flags", None)
    if flags is not None and not flags.writeable:     # a sliding_window_view, broadcast_to
        raise ValueError("assignment destination is read-only")
    if escaped(t) and isinstance(value, Tensor) and value._requires_grad:
        raise RuntimeError(
            "an array handed to NumPy as a plain array (np.asarray, np.array ...) is written "
            "in place with values that carry a gradient; the plain array would not carry it, "
            "and srcgrad's eager run cannot follow it")
    while t is not None:
        if t._view_key is not None and t._view_key[0] == "unmodelled":
            raise RuntimeError(
                "a write through a view that srcgrad's eager run does not model (from reshape, "
                "ravel, a transpose with NumPy semantics...): take a copy (.copy()) first")
        t = t._base


def written(t: Tensor) -> None:
    """After a write in place: ``t`` and the arrays it is a view of are current."""
    while t is not None:
        if id(t) in CURRENT:
            note(t)
        t = t._base


def saved_alias(t: Tensor) -> Tensor:
    """What a node keeps of the Array ``t`` it reads: an alias (see the module docstring)."""
    if _tensor._forward_hook is not None:
        return t
    alias = Tensor._make(t._data, t._grad_fn, t._requires_grad)
    alias.__class__ = type(t)
    alias._output_nr = t._output_nr
    alias._version_counter = t._version_counter
    if t._grad_fn is None and t._requires_grad:
        t._accumulator()               # the alias's gradient goes to the same leaf
        alias._acc_ref = t._acc_ref
    while t is not None:               # a write into the array it views moves that one
        remember(_KEPT, t._data, None)
        t = t._base
    return alias


def kept(t: Tensor) -> bool:
    """Whether a node may read ``t``'s data (or that of an array ``t`` is a view of)."""
    while t is not None:
        if _entry(_KEPT, t._data) is not None or getattr(t._grad_fn, "ans", None) is t._data:
            return True
        t = t._base
    return False


def own_data(t: Tensor) -> None:
    """Before a write into the Array ``t``: when a node keeps its data, ``t`` moves onto a
    copy (see the module docstring)."""
    data = t._data
    if t._base is not None or not kept(t) or _tensor._forward_hook is not None or escaped(t):
        return
    t._data = data.copy()
    t._version_counter = [t._version_counter[0]]
    if _entry(CURRENT, t) is None:
        return
    for key, (ref, _) in list(CURRENT.items()):    # its views no longer share its memory
        view = ref()
        if view is None or view is t:
            continue
        base = view._base
        while base is not None and base is not t:
            base = base._base
        if base is t:
            CURRENT[key] = (ref, _STALE)
