"""Forward mode: ``jvp``, compiled ahead of time into each value's tangent beside it.

``srcgrad.jvp(fun, primals, tangents)`` gives ``(fun(*primals), J·tangents)`` as JAX does;
``srcgrad.jvp(fun)`` gives the transform itself (``.source``, ``.graph``), called with
``(primals, tangents)``.  Float arguments and pytrees of them carry tangents; ints and other
data do not (their tangent is ignored).  The jvp of ``grad(g)`` is a Hessian-vector product,
compiled as reverse over forward: ``grad`` of the generated source of ``g``'s directional
derivative (the Hessian is symmetric), so every composition stays compiled source.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.codegen import DEFAULT_BACKEND
from srcgrad.codegen import backend as backend_named
from srcgrad.errors import CompileError
from srcgrad.frontend import generated_helpers as generated
from srcgrad.frontend.freshness import Snapshot
from srcgrad.frontend.parse import Flat
from srcgrad.frontend.transform_wrappers import is_grad_transform, transform_function
from srcgrad.runtime.rules import streams
from srcgrad.transforms import pytree
from srcgrad.transforms.base import BaseTransform
from srcgrad.transforms.cache import TRANSFORMS
from srcgrad.transforms.callable_args import replaced_defaults
from srcgrad.transforms.callables import refuse_shared_arguments
from srcgrad.transforms.levels import eager_call
from srcgrad.transforms.tangent_args import (
    carries,
    check_tangents,
    data_zero,
    private,
    sequence,
    with_defaults,
)

__all__ = ["Jvp", "jvp", "hvp_transform", "node_primitive"]


def _plain_count(fun: Any) -> int | None:
    """The number of parameters of a function with only positional parameters, else None."""
    try:
        params = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        return None
    return len(params)


class Jvp(BaseTransform):
    """The compiled jvp of ``fun``: ``(primals, tangents) -> (value, tangent)``."""

    def __init__(self, fun: Callable, *, backend: str = DEFAULT_BACKEND, strict: bool = False,
                 tangent_only: bool = False) -> None:
        super().__init__(fun, backend=backend, strict=strict)
        self.fun, self.tangent_only = fun, tangent_only
        self.source: str | None = None
        self.graph = None
        self._built: dict[Any, Any] = {}
        self._inner = fun if is_grad_transform(fun) else None    # jvp of grad: an hvp
        self._count = _plain_count(fun._target if self._inner else fun)
        self._flat: Any = None                   # *args, keyword-only: one value a parameter
        if self._count is None and self._inner is None and callable(fun):
            try:
                self._flat = Flat(fun)
                self._count = len(self._flat.__signature__.parameters)
            except (TypeError, ValueError):
                self._flat = None
        self._snapshot = Snapshot(fun._target if self._inner else fun)
        if self._inner is not None and self._count is not None:   # ahead of time, if it can
            try:
                hvp = hvp_transform(fun._target, tuple(range(self._count)), fun.wrt[0],
                                    backend, True)
                self.source, self.graph = hvp.source, hvp.graph
            except CompileError:
                pass
        if self._count is not None and self._inner is None:   # ahead of time: every tangent
            try:
                self.compiled(tuple(range(self._count)), {}, quiet=True)
            except CompileError:
                pass                                      # refused again at a call that needs it

    def __repr__(self) -> str:
        return f"<srcgrad.jvp of {getattr(self.fun, '__qualname__', self.fun)}>"

    def compiled(self, wrt: tuple[int, ...], trees: dict, quiet: bool = False) -> Any:
        """The built jvp for tangents at ``wrt`` (pytree arguments by structure), or None
        when it falls back to the eager engine."""
        key = (wrt, repr(sorted(trees.items())))
        if key in self._built:
            return self._built[key]
        from srcgrad.build.forward import build_jvp
        try:
            if self._count is None:
                raise CompileError(f"{getattr(self.fun, '__qualname__', self.fun)} has *args, "
                                   "keyword-only or ** parameters: jvp compiles functions of "
                                   "positional parameters (wrap it in a lambda)")
            built = build_jvp(self._flat or self.fun, wrt, self._backend.unfused, trees,
                              tangent_only=self.tangent_only)
        except CompileError as exc:
            if quiet:
                raise
            self.fall_back(exc, of=f"the jvp of {getattr(self.fun, '__qualname__', self.fun)}",
                           once=True)
            built = None
        else:
            self._snapshot.watch(built.resolved)
            self.source, self.graph = built.source, built.graph
        self._built[key] = built
        return built

    @streams.watched              # its reruns see its draws; an outer call's are kept
    def __call__(self, primals: Any, tangents: Any) -> Any:
        primals, tangents = sequence(primals, "primals"), sequence(tangents, "tangents")
        if len(primals) != len(tangents):
            raise TypeError(f"jvp called with different primal and tangent lengths: "
                            f"{len(primals)} and {len(tangents)}")
        if self._flat is not None:               # *args as one tuple, keyword-only defaults
            primals, tangents = self._flattened(primals, tangents)
        elif self._count is not None and len(primals) < self._count:   # defaults: constants
            primals, tangents = self._defaults(primals, tangents)
        values, eager = eager_call(self._snapshot, [*primals, *tangents], len(primals))
        primals, tangents = tuple(values[:len(primals)]), tuple(values[len(primals):])
        replaced = replaced_defaults(self.fun, primals)
        if replaced and not eager:
            self.fall_back(f"{', '.join(replaced)} is given another function than the default "
                           "it is compiled for", arguments=True)
        if eager or replaced:         # under an eager transform, or Tensors: keep the graph
            return self._eager(primals, tangents, tuple(i for i, t in enumerate(tangents)
                                                        if t is not None and carries(primals[i])))
        if self._inner is not None:
            return self._hvp(primals, tangents)
        if self._snapshot.changed() is not None:      # a global or closure was rebound
            self._built.clear()
        if all(type(p) is float or type(p) is np.ndarray and p.dtype.kind in "biuf"
               for p in primals):                                        # the common case
            wrt = tuple(i for i, p in enumerate(primals) if (type(p) is float or
                        p.dtype.kind == "f") and tangents[i] is not None)
            if len(wrt) < len(primals) or any(
                    np.shape(tangents[i]) != np.shape(primals[i]) for i in wrt):
                check_tangents(primals, tangents)      # ints: a zero tangent or none
            built = self._built.get((wrt, "[]")) or self.compiled(wrt, {})
        else:
            check_tangents(primals, tangents)
            for i, (p, t) in enumerate(zip(primals, tangents)):
                if t is not None:
                    pytree.check_differentiable(p, f"primal {i}", vjp=True)   # complex: no
            wrt = tuple(i for i, p in enumerate(primals) if carries(p) and tangents[i] is not None)
            tangents = tuple(data_zero(primals[i], t) if i in wrt else t
                             for i, t in enumerate(tangents))
            built = self.compiled(wrt, {i: pytree.flatten(primals[i])[1] for i in wrt
                                        if not pytree.is_leaf(primals[i])})
        if built is None:
            return self._eager(primals, tangents, wrt)
        if built.ir.mutates:
            refuse_shared_arguments(primals, tuple(i for i, p in enumerate(built.ir.params)
                                                   if p in built.ir.mutates), built.ir.params,
                                    self.fun)
            primals = private(primals, built.ir)
        return built.functions[built.name](*primals, *[tangents[i] for i in wrt])

    def _flattened(self, primals: tuple, tangents: tuple) -> tuple[tuple, tuple]:
        """One value a parameter, as the compiled function takes them (:class:`Flat`): the
        ``*args`` primals (and tangents) as one tuple, keyword-only parameters at their
        defaults (no tangent), ``**kwargs`` left out."""
        signature = inspect.signature(self.fun)
        try:
            values = signature.bind(*primals)
            along = signature.bind_partial(*tangents)
        except TypeError as exc:
            raise TypeError(f"jvp of {getattr(self.fun, '__qualname__', self.fun)}: {exc}") \
                from None
        values.apply_defaults()
        out_p, out_t = [], []
        for name, param in signature.parameters.items():
            if param.kind is inspect.Parameter.VAR_KEYWORD:
                continue
            out_p.append(values.arguments.get(name, param.default))
            t = along.arguments.get(name)
            out_t.append(tuple(t) if param.kind is inspect.Parameter.VAR_POSITIONAL and
                         t is not None else t)
        return tuple(out_p), tuple(out_t)

    def _defaults(self, primals: tuple, tangents: tuple) -> tuple[tuple, tuple]:
        """The primals with the parameters' defaults after them (as the call ``fun(*primals)``
        binds them), which carry no tangent (None)."""
        target = self._inner._target if self._inner is not None else self.fun
        given = with_defaults(target, primals)
        if len(given) < self._count:
            missing = list(inspect.signature(target).parameters)[len(given):]
            raise TypeError(f"jvp of {getattr(target, '__qualname__', target)}: missing "
                            f"primals for {', '.join(missing)}")
        return given, tangents + (None,) * (len(given) - len(primals))

    def _hvp(self, primals: tuple, tangents: tuple) -> Any:
        """``jvp(grad(g))``: the gradient, and its derivative along the tangents: ``grad`` of
        ``g``'s directional derivative (reverse over forward; pytrees as in ``grad``)."""
        check_tangents(primals, tangents)
        inner = self._inner
        along = tuple(i for i, p in enumerate(primals) if carries(p) and tangents[i] is not None)
        if not along:
            value = inner(*primals)
            return value, pytree.zero_like(value)
        for i in along:
            pytree.check_differentiable(primals[i], f"primal {i}", vjp=True)   # complex: no
        tangents = tuple(data_zero(primals[i], t) if i in along else t
                         for i, t in enumerate(tangents))
        trees = {i: pytree.flatten(primals[i])[1] for i in along
                 if not pytree.is_leaf(primals[i])}          # pytrees: the jvp knows them
        given = [tangents[i] for i in along]
        where = inner.wrt[0]
        if where in along and not self.tangent_only:
            # one reverse pass gives both: the directional derivative <grad g, t> is linear
            # in t, so its gradient with respect to t is grad g itself
            both = hvp_transform(inner._target, along, (where, len(primals) + along.index(
                where)), self.backend, self.strict, trees)
            tangent, value = both(*primals, *given)
            if pytree.is_leaf(primals[where]):
                value = pytree.same_kind(value, primals[where])
            return value, tangent
        hvp = hvp_transform(inner._target, along, where, self.backend, self.strict, trees)
        tangent = hvp(*primals, *given)
        return tangent if self.tangent_only else (inner(*primals), tangent)

    def _eager(self, primals: tuple, tangents: tuple, wrt: tuple) -> Any:
        """The eager engine's jvp.  Where it fails, the plain function's own error is the
        answer; if NumPy runs the call, a CompileError naming both reasons."""
        from srcgrad.transforms.fallback import eager_jvp, failure
        try:
            start = time.perf_counter()
            value, tangent = eager_jvp(self.fun, primals, tangents, wrt)
            if self.eager_seconds is None:          # what a fallback costs, measured once
                self.eager_seconds = time.perf_counter() - start
        except (MemoryError, CompileError):
            raise
        except Exception as exc:
            reason = f"; {self.fallback_reason}" if self.fallback_reason else ""
            error = failure(self.fun, list(primals), exc, "run the jvp of", reason)
            raise error from (exc if isinstance(error, CompileError) else None)
        return tangent if self.tangent_only else (value, tangent)


_HVPS: dict[Any, Any] = {}


def hvp_transform(fun: Callable, along: tuple[int, ...], wrt: Any, backend: str,
                  strict: bool, trees: dict | None = None) -> Any:
    """``grad`` (with respect to ``wrt``) of ``fun``'s directional derivative along the
    arguments at ``along``: called with the arguments and one tangent for each of those, it
    gives the derivative of ``grad(fun, wrt)`` along them (reverse over forward)."""
    key = (fun, along, wrt, backend, strict, repr(sorted((trees or {}).items())))
    hvp, snapshot = _HVPS.get(key, (None, None))
    if hvp is None or snapshot.changed() is not None:      # fun's globals rebound: again
        from srcgrad.build.forward import build_jvp
        from srcgrad.transforms.grad import Transform
        snapshot = Snapshot(fun)
        built = build_jvp(fun, along, backend_named(backend).unfused, trees,
                          tangent_only=True)
        snapshot.watch(built.resolved)
        tangent = built.functions[built.name]
        hvp = Transform(tangent, "grad", wrt, backend=backend, strict=strict)
        _HVPS[key] = (hvp, snapshot)
    return hvp


def jvp(fun: Callable, primals: Any = None, tangents: Any = None, *,
        backend: str = DEFAULT_BACKEND, strict: bool = False) -> Any:
    """``(fun(*primals), J·tangents)``: the forward-mode derivative of ``fun`` at
    ``primals`` along ``tangents`` (one per argument, shaped as it).  Without ``primals``,
    the compiled transform itself."""
    if primals is None and tangents is None:
        return Jvp(fun, backend=backend, strict=strict)
    transform = TRANSFORMS.get(fun, ("jvp", backend, strict),
                               lambda: Jvp(fun, backend=backend, strict=strict))
    return transform(primals, tangents)


# ---------------------------------------------------------------------------------------------
# A compiled gradient called inside a function that is differentiated again.

_NODES: dict[Any, Any] = {}


def node_primitive(transform: Any) -> Any:
    """``grad(g)`` as one primitive of the rule table's kind, for a function that calls it and
    is itself differentiated (``grad(lambda x: grad(g)(x) @ v)``).  Its forward function is
    the compiled gradient; its vjp and jvp rules are Hessian-vector products (reverse over
    forward: ``grad`` of ``g``'s directional derivative), primitives of the same kind, so
    that any order composes.  Raises CompileError for what it cannot stand for."""
    from srcgrad.runtime.rules.primitives import Primitive, defvjp_argnum
    if not is_grad_transform(transform) or transform._fn is None:
        why = transform.fallback_reason or "only grad of one positional argument is compiled " \
            "inside another transform"
        raise CompileError(f"{getattr(transform, '__qualname__', transform)} cannot be "
                           f"differentiated again: {why}")
    if transform._snapshot.changed() is not None:      # its function's globals rebound
        fun, kind, wrt, backend, strict = transform._given
        transform.__init__(fun, kind, wrt, backend=backend, strict=strict)
    fn = transform._fn
    key = (transform, fn)
    prim = _NODES.get(key)
    if prim is not None:
        return prim
    g, along = transform._target, transform.wrt[0]
    backend = transform.backend
    prim = Primitive(fn.__name__, fn, transform._nparams)
    defvjp_argnum(prim, lambda argnum, ct, ans, *xs: _hvp_node(
        g, (along,), argnum, backend)(*xs, ct))

    def forward(tangents: list, ans: Any, *xs: Any) -> Any:
        at = tuple(i for i, t in enumerate(tangents) if t is not None)
        return _hvp_node(g, at, along, backend)(*xs, *[tangents[i] for i in at])
    prim.jvp_rule = forward
    _NODES[key] = prim
    generated.add_original(fn, prim)          # its copies in generated modules stand for it
    return prim


def _hvp_node(fun: Callable, along: tuple[int, ...], wrt: int, backend: str) -> Any:
    """The primitive of ``grad(directional derivative of fun along `along`, wrt)``."""
    return node_primitive(hvp_transform(fun, along, wrt, backend, strict=True))


def jvp_function(fun: Callable, count: int) -> Any:
    """The generated jvp function of ``fun`` with a tangent for each of its ``count``
    arguments (strict): what a call of ``srcgrad.jvp`` inside compiled code calls."""
    if is_grad_transform(fun):                 # jvp(grad(g)) inside: forward over its call
        fun = transform_function(fun)
    transform = Jvp(fun, strict=True)
    if transform._count != count:
        raise CompileError(f"jvp of {getattr(fun, '__qualname__', fun)} is given {count} "
                           f"primals for {transform._count} parameters")
    built = transform.compiled(tuple(range(count)), {})
    return built.functions[built.name]


Jvp.jvp_of = staticmethod(jvp_function)
jvp.jvp_of = jvp_function


generated.set_node_factory(node_primitive)     # how the front end lowers grad(g)(x) inside
