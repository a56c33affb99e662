"""Functions passed as arguments: the code is built at the call, for the very functions passed.

``grad(loss)(params, x, np.tanh)``, or ``objective(params, x, y, activation=relu)`` where the
default is another function: a parameter the function calls (or hands to a helper that calls
it) is bound, when lowering, to the function passed, and its call compiled as a call of that
function (a user function's, a NumPy function's primitive, a lambda's body).  The code is keyed
by the functions (:class:`srcgrad.frontend.callbacks.CallableArgument`: their identities, or
the code of a plain lambda written at the call): another function passed builds code of its
own, and so does one whose globals (or those of the functions it calls) were rebound since.
The transform keeps what its keys name alive, so that no identity is reused.
"""

from __future__ import annotations

import inspect
from typing import Any

from srcgrad.frontend.callbacks import CallableArgument, function_value
from srcgrad.frontend.freshness import Snapshot
from srcgrad.frontend.user_methods import static_default

__all__ = ["callable_structures", "other_function", "replaced_defaults"]


def callable_structures(transform: Any, values: list) -> dict[int, CallableArgument]:
    """The functions among the arguments not differentiated, by position (a parameter's
    default function too: only this code binds it)."""
    out = {}
    for i, v in enumerate(values):
        if i in transform.wrt or not function_value(v):
            continue
        kept = transform.__dict__.setdefault("_functions_passed", {})
        name = CallableArgument(v).name()
        named_by, snapshot, version = kept.get(name, (None, None, 0))
        if snapshot is None or snapshot.changed() is not None:   # a global of it rebound
            version += snapshot is not None
            kept[name] = (CallableArgument(v).named_by, Snapshot(v), version)   # kept alive
        out[i] = CallableArgument(v, version)
    return out


def other_function(transform: Any, values: list) -> bool:
    """Whether a parameter whose default is a function compiled in is given something else
    that the code cannot be built for (it then runs on the eager engine)."""
    return any(values[i] is not d and not function_value(values[i])
               for i, d in transform._bound_defaults.items())


def replaced_defaults(fun: Any, values: list | tuple) -> list[str]:
    """The parameters of ``fun`` (or of the function a ``grad`` transform wraps) whose default
    is a function compiled in, given another value at this call: code built for the default
    would not call it (``jvp``, the Jacobians and the Hessian then run on the eager engine)."""
    target = inspect.unwrap(fun)            # a transform's function: the user's own
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return []
    return [p.name for p, v in zip(params, values)
            if v is not p.default and static_default(target, p.name) is not None]
