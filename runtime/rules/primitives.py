"""Primitives: the array operations srcgrad knows how to differentiate.

A :class:`Primitive` wraps one array function (``np.exp``, ``np.matmul``, a helper such as
:func:`sum_to`) together with its vector-Jacobian rules, one rule per differentiable input, in
the style of HIPS autograd's ``defvjp``.  A rule is ordinary array code::

    defvjp(np.sin, lambda g, ans, x: g * np.cos(x))

It is called as ``rule(g, ans, *inputs, **params)`` and returns its input's gradient (broadcasting
is undone centrally by :func:`sum_to`).  Rules use operators, NumPy functions, ``.shape`` and the
like and other primitives, never in-place writes or an ``if`` on data, so the same rule runs on
NumPy or CuPy arrays, on ``Tensor`` objects (``create_graph=True``) and on the compiler's
symbolic values (which print it as source).

Forward mode (:meth:`Primitive.jvp`) takes one tangent per input: an explicit rule given by
:func:`defjvp`, or one derived from what the primitive is (linear, multilinear, or elementwise
with a diagonal Jacobian: see :mod:`srcgrad.runtime.rules.forward_rules`).

What a rule reads decides what a node saves for the backward pass, exactly as PyTorch's nodes
save what their formulas need: ``g * ans`` saves the output, ``g * np.cos(x)`` the input,
``np.reshape(g, x.shape)`` only the input's shape.
"""

from __future__ import annotations

import dis
import functools
import inspect
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.runtime.rules.forward_rules import check_vjp_rule, derived_jvp

__all__ = ["Primitive", "Meta", "primitive", "defvjp", "defvjp_argnum", "lookup", "PRIMITIVES",
           "NUMPY_BINDINGS", "NO_GRADIENT", "bind_numpy", "sum_to", "unbroadcast", "helper",
           "is_differentiable_dtype", "NotCompiled", "defjvp", "rules_generation"]

PRIMITIVES: dict[str, Primitive] = {}
"""Every registered primitive by name: the rule table, as tests and the compiler see it."""

NUMPY_BINDINGS: dict[Callable, tuple[Primitive, Callable]] = {}
"""NumPy-level function (``np.sum``, ``np.linalg.solve``) → (its primitive, an adapter that
takes NumPy's call signature and calls the primitive with inputs and keyword parameters)."""

NO_GRADIENT: dict[Callable, str] = {}
"""NumPy functions whose result carries no gradient, whatever their arguments (→ why): a
truth value, indices, a piecewise constant.  Both modes run them on plain data."""


class NotCompiled(TypeError):
    """Raised by compiled code for arguments its lowering could not see and does not model
    (``np.gradient`` without ``axis=`` of an N-d array, which returns a tuple): the safety
    net refuses the call with a CompileError (strict) or runs it eagerly.  Generated modules
    define their own copy of this class: the safety net knows it by ``not_compiled``."""

    not_compiled = True


_META_ATTRS = frozenset({"shape", "ndim", "dtype", "size"})


class Meta:
    """What a node keeps of an input whose rule reads only its shape, dtype or size."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple[int, ...], dtype: Any) -> None:
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


class Primitive:
    """An array function plus its derivative rules.

    ``nin`` is the number of array inputs (``None``: variadic, as ``concatenate``); every
    further argument is a static parameter and is passed by keyword.  ``elementwise``: the
    output has the broadcast shape of the inputs, element by element (every ufunc is).
    """

    __slots__ = ("name", "fn", "nin", "vjps", "argnum_vjp", "broadcasts", "elementwise",
                 "dtype_rule", "reads", "_saves", "complete", "jvp_rule", "linear",
                 "multilinear", "diagonal", "__dict__")
    # Hints for the compiler's emitters and backends, set where a primitive is defined (what
    # each one means: srcgrad.runtime.rules); the emitters and backends name no operation.
    spelling = full_adjoint = accumulate_by = shift = default_kind = operator = None
    power_of = numerator = numba = f64_twin = cuda = cuda_bool = reduce_from = None
    reduces_with = eager_only = None
    fresh_result = makes_float = folds_seed = int_closed = fused_operator = python_raises = False
    numba_arrays = complex_vjp = complex_jvp = False

    def __init__(self, name: str, fn: Callable, nin: int | None = 1, *,
                 broadcasts: bool = False, elementwise: bool = False,
                 dtype_rule: str = "promote") -> None:
        self.name = name
        self.fn = fn
        self.nin = nin
        self.vjps: tuple[Callable | None, ...] = ()
        self.argnum_vjp: Callable | None = None
        self.broadcasts = broadcasts
        self.elementwise = elementwise
        self.dtype_rule = dtype_rule      # promote | float | bool | same | index | keep
        self.reads: list[dict[str, str]] = []
        self._saves: dict[tuple[bool, ...], tuple[str, tuple[str, ...]]] = {}
        self.complete = False
        # forward mode (see forward_rules): an explicit rule, or what derives one
        self.jvp_rule: Callable | None = None
        self.linear = self.multilinear = False
        self.diagonal = elementwise and getattr(fn, "signature", None) is None
        self.folds_seed = isinstance(fn, np.ufunc)       # the hint's default
        self.__doc__ = getattr(fn, "__doc__", None)

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"

    def __call__(self, *args: Any, **params: Any) -> Any:
        for a in itertools.chain(args, params.values()):   # params: ``shape=x.shape`` in rules
            handler = getattr(type(a), "__srcgrad_primitive__", None)
            if handler is not None:
                return handler(self, args, params)
        return self.fn(*args, **params)

    def param_names(self) -> frozenset[str] | None:
        """Names of the static parameters the rules accept (None: a primitive without rules)."""
        rule = self.argnum_vjp or next((r for r in self.vjps if r is not None), None)
        if rule is None:
            return None
        code = rule.__code__
        skip = 3 if self.argnum_vjp else 2 + self.nin
        return frozenset(code.co_varnames[skip:code.co_argcount + code.co_kwonlyargcount])

    @property
    def differentiable(self) -> bool:
        return bool(self.argnum_vjp or any(self.vjps))

    def vjp(self, argnum: int) -> Callable | None:
        """The rule for input ``argnum`` as ``rule(g, ans, *inputs, **params)``, or None."""
        if self.argnum_vjp is not None:
            rule = self.argnum_vjp
            return lambda g, ans, *xs, **kw: rule(argnum, g, ans, *xs, **kw)
        return self.vjps[argnum] if argnum < len(self.vjps) else None

    def jvp(self, tangents: list[Any], ans: Any, *xs: Any, **params: Any) -> Any:
        """The output's tangent given one tangent per input (None: zero), or None when zero.

        An input without a vjp rule is not differentiable: its tangent is ignored.  The
        result broadcasts to ``ans``'s shape and may have a wider float dtype.
        """
        able = [self.argnum_vjp is not None or (i < len(self.vjps) and self.vjps[i] is not None)
                for i in range(len(xs))]
        tangents = [t if a else None for t, a in zip(tangents, able)]
        if all(t is None for t in tangents):
            return None
        return derived_jvp(self, tangents, ans, xs, params, able)

    def needs(self, requires: list[bool]) -> tuple[bool, ...] | None:
        """Which inputs get a gradient, given which require one (None: no input does)."""
        if not self.complete:
            rules = self.vjps
            requires = [r and i < len(rules) and rules[i] is not None
                        for i, r in enumerate(requires)]
        return tuple(requires) if True in requires else None

    def _finish(self) -> None:
        """Recompute what the rules imply, after they change."""
        self._saves.clear()
        self.complete = self.argnum_vjp is not None or (
            len(self.vjps) == (self.nin or 0) and None not in self.vjps)

    def saves(self, needs: tuple[bool, ...]) -> tuple[str, tuple[str, ...]]:
        """What a node must keep when the inputs flagged in ``needs`` want gradients.

        Returns ``(ans_kind, input_kinds)``, each kind ``""`` (nothing), ``"meta"`` (shape and
        dtype) or ``"data"`` (the array itself).
        """
        hit = self._saves.get(needs)
        if hit is not None:
            return hit
        merged: dict[str, str] = {}
        for i, need in enumerate(needs):
            if need:
                table = self.reads[0] if self.argnum_vjp else self.reads[i]
                for name, kind in table.items():
                    if merged.get(name) != "data":
                        merged[name] = kind
        names = [self._vararg] * len(needs) if self.argnum_vjp is not None else self._argnames()
        result = (merged.get("ans", ""), tuple(merged.get(n, "") for n in names))
        self._saves[needs] = result
        return result

    # names of the rule parameters that stand for the inputs (after g, ans)
    def _argnames(self) -> list[str]:
        rule = next(r for r in self.vjps if r is not None)
        return list(rule.__code__.co_varnames[2:2 + self.nin])

    @property
    def _vararg(self) -> str:
        code = self.argnum_vjp.__code__
        return code.co_varnames[code.co_argcount + code.co_kwonlyargcount]


def _rule_reads(rule: Callable) -> dict[str, str]:
    """Which parameters a rule reads: ``"meta"`` if only ``.shape``/``.ndim``/…, else ``"data"``."""
    reads: dict[str, str] = {}

    def scan(code: Any) -> None:
        ins = list(dis.get_instructions(code))
        for k, op in enumerate(ins):
            if not (op.opname.startswith("LOAD_FAST") or op.opname in ("LOAD_DEREF",
                                                                          "LOAD_CLOSURE")):
                continue
            names = op.argval if isinstance(op.argval, tuple) else (op.argval,)
            nxt = ins[k + 1] if k + 1 < len(ins) else None
            meta = (len(names) == 1 and nxt is not None and nxt.opname == "LOAD_ATTR"
                    and nxt.argval in _META_ATTRS)
            for name in names:
                if not meta or reads.get(name) == "data":
                    reads[name] = "data"
                else:
                    reads.setdefault(name, "meta")
        for const in code.co_consts:
            if hasattr(const, "co_code"):
                scan(const)

    scan(rule.__code__)
    return reads


def primitive(fn: Callable | None = None, *, name: str | None = None, nin: int | None = 1,
              broadcasts: bool = False, elementwise: bool = False, dtype_rule: str = "promote"
              ) -> Any:
    """Register ``fn`` as a primitive (decorator).  Returns the :class:`Primitive`."""
    def wrap(f: Callable) -> Primitive:
        prim = Primitive(name or f.__name__, f, nin, broadcasts=broadcasts,
                         elementwise=elementwise, dtype_rule=dtype_rule)
        PRIMITIVES[prim.name] = prim
        return prim
    return wrap(fn) if fn is not None else wrap


def lookup(fun: Any) -> Primitive:
    """The primitive for a NumPy function, a primitive name or a primitive."""
    if isinstance(fun, Primitive):
        return fun
    if isinstance(fun, str):
        return PRIMITIVES[fun]
    if fun not in NUMPY_BINDINGS:
        raise KeyError(f"no primitive is registered for {fun!r}")
    return NUMPY_BINDINGS[fun][0]


def bind_numpy(fun: Callable, prim: Primitive, adapter: Callable | None = None) -> None:
    """Route calls of NumPy's ``fun`` on Tensors (and in compiled code) to ``prim``.

    Without an ``adapter``, NumPy's own signature is bound: the first ``prim.nin`` arguments are
    the inputs and the rest become keyword parameters.  A parameter the rules do not know (``out=``,
    ``where=``) is refused with a TypeError instead of being silently ignored.
    """
    NUMPY_BINDINGS[fun] = (prim, adapter or _signature_adapter(fun, prim))


def _signature_adapter(fun: Callable, prim: Primitive) -> Callable:
    if isinstance(fun, np.ufunc):
        return prim
    sig = inspect.signature(fun)

    def call(*args: Any, **kwargs: Any) -> Any:
        bound = list(sig.bind(*args, **kwargs).arguments.items())
        inputs = [value for _, value in bound[:prim.nin]]
        known = prim.param_names()
        params = {}
        for name, value in bound[prim.nin:]:
            if known is None or name in known:
                params[name] = value
            elif value is not None:
                raise TypeError(f"{fun.__name__}() argument {name!r} is not supported "
                                f"on srcgrad Tensors")
        return prim(*inputs, **params)
    call.plain = True           # NumPy's own signature: the primitive's hints describe ``fun``
    return call


_GENERATION = [0]     # bumped whenever rules are given: transforms made before them are stale


def rules_generation() -> int:
    return _GENERATION[0]


def _as_primitive(fun: Any, nin: int | None, broadcasts: bool | None, dtype_rule: str
                  ) -> Primitive:
    _GENERATION[0] += 1                      # its rules are about to change
    if isinstance(fun, Primitive):
        if broadcasts is not None:
            fun.broadcasts = broadcasts
        return fun
    if isinstance(fun, np.ufunc):
        prim = Primitive(fun.__name__, fun, fun.nin, dtype_rule=dtype_rule, elementwise=True,
                         broadcasts=fun.nin > 1 if broadcasts is None else broadcasts)
    else:      # a user's function may broadcast its inputs: undone as the eager engine does
        user = not (getattr(fun, "__module__", None) or "").startswith("numpy")
        prim = Primitive(fun.__name__, fun, nin, dtype_rule=dtype_rule,
                         broadcasts=user if broadcasts is None else broadcasts)
    PRIMITIVES[prim.name] = prim
    bind_numpy(fun, prim)
    return prim


def defvjp(fun: Any, *rules: Callable | None, nin: int | None = None,
           broadcasts: bool | None = None, dtype_rule: str = "promote",
           reads: dict[str, str] | None = None) -> Primitive:
    """Give ``fun`` one vjp rule per input (None: that input gets no gradient).

    ``fun`` may be a :class:`Primitive`, a NumPy ufunc or any array function; NumPy functions
    are registered as primitives of the same name and bound so that calling them on Tensors
    records the operation.  Used by the rule table and by users (``srcgrad.defvjp``).
    """
    for rule in rules:
        check_vjp_rule(rule, nin if nin is not None else len(rules))
    prim = _as_primitive(fun, nin if nin is not None else len(rules), broadcasts, dtype_rule)
    prim.vjps = tuple(rules)
    prim.reads = [_rule_reads(r) if r is not None else {} for r in rules]
    prim._saves.clear()
    return prim


def defvjp_argnum(fun: Any, rule: Callable, *, dtype_rule: str = "promote",
                  reads: dict[str, str] | None = None) -> Primitive:
    """One rule for all inputs of a variadic primitive: ``rule(argnum, g, ans, *xs, **params)``."""
    prim = _as_primitive(fun, None, None, dtype_rule)
    prim.argnum_vjp = rule
    prim.reads = [reads if reads is not None else _rule_reads(rule)]
    prim._finish()
    return prim


def defjvp(fun: Any, rule: Callable | None = None, *, linear: bool = False,
           multilinear: bool = False, diagonal: bool = False) -> Primitive:
    """Give ``fun`` a forward rule ``rule(tangents, ans, *xs, **params)`` (the output's
    tangent, or None, from one tangent per input, None: zero), or mark it ``linear``
    (jointly, in its differentiable inputs: reshape, sum), ``multilinear`` (in each input:
    matmul, einsum) or ``diagonal`` (a diagonal Jacobian whose vjp rules are ``g`` times a
    derivative: np.clip), from which :mod:`~srcgrad.runtime.rules.forward_rules` derives one."""
    prim = lookup(fun)
    prim.jvp_rule = rule if rule is not None else prim.jvp_rule
    prim.linear, prim.multilinear = prim.linear or linear, prim.multilinear or multilinear
    prim.diagonal = prim.diagonal or diagonal
    _GENERATION[0] += 1
    return prim


def helper(fn: Callable) -> Callable:
    """Mark a plain function that rules call for logic on shapes, axes or strings.

    On arrays and Tensors it simply runs.  Given the compiler's symbolic values it is not
    traced: the compiler prints a call to it and puts its source in the generated module.
    """
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for a in itertools.chain(args, kwargs.values()):
            handler = getattr(type(a), "__srcgrad_helper__", None)
            if handler is not None:
                return handler(wrapper, args, kwargs)
        return fn(*args, **kwargs)
    wrapper.helper_source = fn  # type: ignore[attr-defined]
    return wrapper


def is_differentiable_dtype(dtype: Any) -> bool:
    return np.dtype(dtype).kind in "fc"


# ---------------------------------------------------------------------------------------------
# Undoing broadcasting: the one place it happens.

def unbroadcast(x: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``x`` down to ``shape``, undoing NumPy broadcasting (plain arrays)."""
    if getattr(x, "shape", ()) == tuple(shape):          # numbers have no shape: ()
        return x
    lead = x.ndim - len(shape)
    if lead < 0:                    # a value written with leading 1-dims NumPy dropped
        x, lead = x.reshape((1,) * -lead + x.shape), 0
    axes = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape)
                                      if n == 1 and x.shape[i + lead] != 1)
    out = x.sum(axis=axes, keepdims=True)
    return out.reshape(shape)


sum_to = primitive(unbroadcast, name="sum_to", dtype_rule="same")
"""``unbroadcast`` as a primitive, so that rules (and create_graph) can use it."""
