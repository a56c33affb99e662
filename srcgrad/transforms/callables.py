"""What a transform may be given as its function: a def or lambda, a bound method or
classmethod (compiled with its object bound), an instance with ``__call__``, a
``functools.partial`` of one of these, or anything else (the eager engine); how to call it
with one value per parameter; and how ``wrt`` positions map onto a signature with ``*args``.

Like JAX and HIPS autograd, ``wrt=k`` names the k-th positional argument *as passed*: for
``def f(*args)``, ``grad(f)(a, b)`` is the gradient with respect to ``a``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import linecache
import sys
import types
from collections.abc import Callable
from typing import Any

from srcgrad.frontend.parse import Flat, plain_signature
from srcgrad.frontend.transform_wrappers import is_grad_transform, transform_function
from srcgrad.transforms.fallback import (
    call_with,  # how the eager engine calls it: one value a parameter
)

__all__ = ["target", "describe", "call_with", "Flat", "plain_signature", "Positions"]

_P = inspect.Parameter


def target(fun: Any) -> tuple[Callable, tuple, str | None]:
    """The function to compile, the arguments bound in front of the caller's (a partial's),
    and why it cannot compile (None: it may).  A bound method is its own target: the
    compiler binds its object (``self``) as a constant."""
    if is_grad_transform(fun):            # grad of grad: a plain function that calls it
        return transform_function(fun), (), None
    api = sys.modules.get("srcgrad.transforms.grad")  # read: it imports this module
    if api is not None and isinstance(fun, api.Transform):
        return fun, (), (f"{describe(fun)} is itself a srcgrad transform: higher-order "
                         "differentiation of a transform is not compiled yet (the eager "
                         "engine computes it)")
    if isinstance(fun, types.MethodType) and isinstance(fun.__func__, types.FunctionType):
        return fun, (), None
    if isinstance(fun, types.FunctionType):
        return fun, (), None
    if isinstance(fun, functools.partial) and not fun.keywords:
        inner, prefix, refusal = target(fun.func)
        if refusal is None:
            return inner, prefix + tuple(fun.args), None
    ours = (type(fun).__module__ or "").startswith("srcgrad")      # srcgrad.compile, ...
    call = None if isinstance(fun, functools.partial) or ours else inspect.getattr_static(
        type(fun), "__call__", None)
    if isinstance(call, types.FunctionType):
        return types.MethodType(call, fun), (), None     # an instance with __call__
    what = "a functools.partial with keyword arguments" if isinstance(
        fun, functools.partial) else f"a {type(fun).__name__}"
    return fun, (), (f"{describe(fun)} is {what}, not a function defined with def or lambda; "
                     "srcgrad compiles functions (wrap it: lambda x: f(x, ...))")


def describe(fun: Any) -> str:
    name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None)
    if isinstance(name, str):
        return name
    inner = getattr(fun, "func", None)
    return f"functools.partial({describe(inner)})" if inner is not None else \
        type(fun).__name__


class Positions:
    """The parameters behind ``wrt`` positions of a signature with ``*args``, keyword-only
    parameters or ``**kwargs``, and what the compiled code takes (one value a parameter,
    ``**kwargs`` left out)."""

    def __init__(self, signature: inspect.Signature, wrt: tuple, offset: int,
                 fun: Any) -> None:
        params = list(signature.parameters.values())
        self.kinds = [p.kind for p in params]
        positional = [p.name for p in params if p.kind in (_P.POSITIONAL_ONLY,
                                                            _P.POSITIONAL_OR_KEYWORD)]
        self.varargs = next((i for i, k in enumerate(self.kinds) if k is _P.VAR_POSITIONAL),
                            None)
        self.npositional = len(positional)
        self.picks: list[tuple[int, int | None]] = []    # (parameter, item of *args or None)
        for w in wrt:
            if isinstance(w, bool) or not isinstance(w, (int, str)):
                raise TypeError(f"wrt must be an argument position or name, not {w!r}")
            if isinstance(w, str):
                if w not in positional[offset:]:
                    what = "no positional argument" if w not in signature.parameters else \
                        "a parameter that is not positional"
                    raise ValueError(f"{describe(fun)} has {what} named {w!r}; wrt names "
                                     "a positional argument (as JAX's argnums does)")
                w = positional.index(w) - offset
            k = w + offset
            if w < 0 or self.varargs is None and k >= len(positional):
                raise ValueError(f"wrt={w} is out of range for {describe(fun)}, which takes "
                                 f"{len(positional) - offset} positional arguments")
            self.picks.append((k, None) if k < len(positional) else
                              (self.varargs, k - len(positional)))
        self.wrt = tuple(p for p, _ in self.picks)

    def compiled_values(self, values: list) -> list:
        """The bound values (one a parameter) as the compiled function takes them."""
        return [v for v, k in zip(values, self.kinds) if k is not _P.VAR_KEYWORD]

    def check(self, values: list) -> None:
        """JAX's TypeError when a position of ``wrt`` was not passed."""
        for p, item in self.picks:
            if item is not None and item >= len(values[p]):
                raise TypeError(f"differentiating with respect to positional argument "
                                f"{self.npositional + item} needs at least "
                                f"{self.npositional + item + 1} positional arguments, but "
                                f"{self.npositional + len(values[p])} were passed")

    def pick(self, gradients: Any, single: bool) -> Any:
        """The gradients of the positions asked for, from those of the parameters."""
        items = (gradients,) if single else tuple(gradients)
        picked = tuple(g if item is None else g[item] for g, (_, item) in zip(items,
                                                                               self.picks))
        return picked[0] if single else picked

    def by_position(self, gradients: tuple, count: int) -> tuple:
        """A vjp's gradients (one a parameter) as one a positional argument passed
        (``count`` of them in ``*args``), as JAX's vjp gives them."""
        out: list = []
        for g, kind in zip(gradients, self.kinds):
            if kind is _P.VAR_POSITIONAL:
                out.extend(g if g is not None else (None,) * count)
            elif kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD):
                out.append(g)
        return tuple(out)


def written_container(fn_name: str, names: list[str], values: Any, written: tuple) -> str:
    """Why a call runs eagerly: the code writes into what an argument it is not
    differentiated by holds, compiled for an array, and the caller passed a container."""
    i = next(i for i in written if isinstance(values[i], (dict, list, tuple)))
    return (f"{fn_name} writes in place into what its argument {names[i]!r} holds, and "
            f"{names[i]!r} is a {type(values[i]).__name__}, not differentiated: srcgrad compiles "
            f"such a write for an array argument only (differentiate {names[i]!r} too, or copy "
            "the array before writing into it)")


def wrt_position(w: Any, names: list[str], fun: Any) -> int:
    """The position ``wrt`` names (an index or a parameter name) among ``names``."""
    if isinstance(w, bool) or not isinstance(w, (int, str)):
        raise TypeError(f"wrt must be an argument position or name, not {w!r}")
    if isinstance(w, int):
        if not 0 <= w < len(names):
            raise ValueError(f"wrt={w} is out of range for {describe(fun)}, which takes "
                             f"{len(names)} arguments")
        return w
    if w not in names:
        raise ValueError(f"{describe(fun)} has no argument named {w!r}")
    return names.index(w)


def refuse_shared_arguments(values: Any, mutated: tuple, names: list[str],
                             fun: Any = None) -> None:
    """Two arguments that share memory, one of them written in place by the code (``f(s, s)``
    where ``f`` writes into its second argument), or an array the code reads elsewhere (a
    global, a closure value, an attribute of an argument object) sharing memory with the one
    written: NumPy's result depends on the sharing, which neither the compiled code nor the
    eager run (private copies) follows: refused."""
    import numpy as np

    from srcgrad.errors import CompileError
    from srcgrad.transforms import pytree
    arrays = [(i, leaf) for i, v in enumerate(values) for leaf in pytree.flatten(v)[0]
              if isinstance(leaf, np.ndarray)]
    for k, (i, a) in enumerate(arrays):
        for j, b in arrays[k + 1:]:
            if (i in mutated or j in mutated) and np.may_share_memory(a, b):
                raise CompileError(
                    f"the arguments {names[i]!r} and {names[j]!r} share memory and the code "
                    "writes into one of them in place; srcgrad follows such a write only within "
                    "one argument (pass a copy)", _location(fun))
    written = [(i, a) for i, a in arrays if i in mutated]
    if not written:
        return
    for what, b in _read_elsewhere(values, fun, names):
        for i, a in written:
            if np.may_share_memory(a, b):
                raise CompileError(
                    f"{what} shares memory with the argument {names[i]!r}, which the code "
                    "writes into in place; srcgrad follows such a write only within one "
                    "argument (pass a copy)", _location(fun))


def note_mutated(transform: Any, key: str, ir: Any) -> None:
    """Keep the positions the code built for ``key`` writes into in place."""
    mutated = tuple(i for i, p in enumerate(ir.params) if p in ir.mutates)
    transform.__dict__.setdefault("_mutated_by_key", {})[key] = mutated


def refuse_sharing(transform: Any, values: Any, key: str | None = None) -> None:
    """:func:`refuse_shared_arguments` for a grad transform's call: the positions its
    generic code writes into, or (``key``) those of the code built for these arguments."""
    mutated = transform._mutated if key is None else \
        transform.__dict__.get("_mutated_by_key", {}).get(key)
    if mutated:
        refuse_shared_arguments(values, mutated, list(transform._signature.parameters),
                                transform._target)


def _read_elsewhere(values: Any, fun: Any, names: list[str]) -> list[tuple[str, Any]]:
    """The arrays the function may read other than through its array arguments: the globals
    its code names, its closure values, the attributes of argument objects (and of the
    object a method is bound to)."""
    import numpy as np

    from srcgrad.transforms import pytree

    def leaves(what: str, value: Any) -> list[tuple[str, Any]]:
        if isinstance(value, np.ndarray):
            return [(what, value)]
        if isinstance(value, (dict, list, tuple)):
            return [(what, leaf) for leaf in pytree.flatten(value)[0]
                    if isinstance(leaf, np.ndarray)]
        return []

    found: list[tuple[str, Any]] = []
    objects = [(f"an attribute of the argument {names[i] if i < len(names) else i!r}", v)
               for i, v in enumerate(values)]
    if isinstance(fun, types.MethodType):
        objects.append(("an attribute of the bound object", fun.__self__))
    for what, v in objects:
        if not isinstance(v, (np.ndarray, dict, list, tuple, int, float, complex, str)) and \
                isinstance(getattr(v, "__dict__", None), dict):
            for name, item in vars(v).items():
                found += leaves(f"{what} ({name!r})", item)
    code = getattr(getattr(fun, "__func__", fun), "__code__", None)
    if code is not None:
        spaces = getattr(getattr(fun, "__func__", fun), "__globals__", {})
        todo = [code]
        while todo:
            c = todo.pop()
            todo += [k for k in c.co_consts if isinstance(k, types.CodeType)]
            for name in c.co_names:
                if name in spaces:
                    found += leaves(f"the global {name!r}", spaces[name])
        for cell in getattr(getattr(fun, "__func__", fun), "__closure__", None) or ():
            with contextlib.suppress(ValueError):          # an empty cell
                found += leaves("a closure value", cell.cell_contents)
    return found


def _location(fun: Any) -> Any:
    """Where the function is defined, for a refusal made at the call."""
    from srcgrad.errors import Location
    code = getattr(getattr(fun, "__func__", fun), "__code__", None)
    if code is None:
        return None
    line = linecache.getline(code.co_filename, code.co_firstlineno).rstrip("\n")
    return Location(code.co_filename, code.co_firstlineno, 0, max(len(line), 1), line,
                    code.co_name)
