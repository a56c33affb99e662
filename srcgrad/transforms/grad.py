"""The transforms users call: ``grad``, ``value_and_grad``, ``vjp``.

A transform compiles when it is created (ahead of time): ``.source`` and ``.graph`` can be read
at once.  When the compiler cannot handle the function it falls back to the eager engine with
one ``FallbackWarning`` naming the reason (``strict=True`` raises the ``CompileError``).

A safety net (``srcgrad.transforms.safety``) stands behind the compiled code: when it raises,
the call runs again on the eager engine.  The function may be any callable
(``srcgrad.transforms.callables``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.build.parts import BUILD_LOCK
from srcgrad.codegen import DEFAULT_BACKEND, for_arrays
from srcgrad.errors import CompileError
from srcgrad.frontend import parse as frontend
from srcgrad.frontend.freshness import Snapshot
from srcgrad.frontend.user_methods import static_default
from srcgrad.runtime.eager.tensor import Tensor
from srcgrad.runtime.rules import streams
from srcgrad.transforms import argument_objects, pytree, specialise
from srcgrad.transforms.base import BaseTransform
from srcgrad.transforms.cache import TRANSFORMS
from srcgrad.transforms.callable_args import callable_structures, other_function
from srcgrad.transforms.callables import (
    Flat,
    Positions,
    call_with,
    note_mutated,
    plain_signature,
    refuse_sharing,
    target,
    wrt_position,
)
from srcgrad.transforms.hyperparameters import argument_structures
from srcgrad.transforms.levels import free_arrays, holds_containers, nested
from srcgrad.transforms.safety import EAGER, PASS_THROUGH, EagerRun, SafetyNet, signature
from srcgrad.transforms.specialise import Generic, ShapeSpecialiser

__all__ = ["grad", "value_and_grad", "vjp", "Transform"]


class _ArgumentError(TypeError):
    """A differentiated argument that is not real floating point (raised as it is)."""


class Transform(BaseTransform):
    """A transformed function: call it; read ``.source``, ``.graph``, ``.fallback_reason``.

    It holds its parts: the specialisations of its generic code (``_shapes``, a
    :class:`ShapeSpecialiser`) and the safety net behind the compiled code (``net``, a
    :class:`SafetyNet`).  Transforms built on it (``compile``, a Hessian's loop) read
    :attr:`code`, :meth:`serves` and ``net``."""

    def __init__(self, fun: Callable, kind: str, wrt: Any = 0, *,
                 backend: str = DEFAULT_BACKEND, strict: bool = False) -> None:
        super().__init__(fun, backend=backend, strict=strict)
        self.kind = kind
        self._target, self._prefix, refusal = target(fun)
        not_plain = frontend.not_plain(self._target)
        if not_plain is not None:                 # no fallback runs a generator either
            raise TypeError(not_plain)
        self._given = (fun, kind, wrt, backend, strict)
        self._snapshot = Snapshot(self._target)   # free values, to see them rebound
        self._reads_tensors, self._free_refusal = free_arrays(self._snapshot)
        self._containers = holds_containers(self._snapshot)   # read again at every call
        self._signature = inspect.signature(self._target)
        names = list(self._signature.parameters)
        self._nparams = len(names)
        self._call = call_with(self._signature)
        self._single = not isinstance(wrt, (tuple, list))
        self._bound_defaults = {i: p.default for i, p in enumerate(
            self._signature.parameters.values()) if static_default(self._target, p.name)
            is not None}                          # def f(a, _r=np.sum): np.sum is compiled
        if self._bound_defaults:
            self._nparams = -1                    # checked at each call
        self._positions: Positions | None = None   # *args, keyword-only, **kwargs
        self._compiled_target: Any = self._target
        if plain_signature(self._signature):
            shown = names[len(self._prefix):]
            self.wrt = tuple(wrt_position(w, shown, fun) + len(self._prefix)
                             for w in ((wrt,) if self._single else wrt))
        else:
            given = () if kind == "vjp" else (wrt,) if self._single else tuple(wrt)
            self._positions = Positions(self._signature, given, len(self._prefix), fun)
            self.wrt, self._nparams = self._positions.wrt, -1    # never the positional path
            if kind == "vjp":                # one cotangent a parameter, *args as a tuple
                self.wrt = tuple(range(len(self._positions.compiled_values(names))))
            self._compiled_target = Flat(self._target)
        self.source: str | None = None
        self.graph = None
        self._fn: Callable | None = None
        self._specialised: dict[Any, Callable | None] = {}
        self.sources: dict[str, str] = {}     # the specialisations' sources, by signature
        self._shapes: ShapeSpecialiser | None = None
        self._shapes_fixed = False
        self._written = self._mutated = ()    # positions written in place (not differentiated)
        self._vjp = kind == "vjp" and not self._backend.by_arrays
        self._lowered = None                  # the IR the specialisations are emitted from
        if not self._backend.by_arrays:     # else decided at the first call, by the arrays
            self._build_ahead(refusal)
        self.net = SafetyNet(self, EagerRun(
            self._target, kind, self.wrt, self._single, self._call, names, self._written,
            self._vjp, self._backend), self._bind, self._compiled_for, self._shapes)

    def _build_ahead(self, refusal: str | None) -> None:
        """The generic code, built when the transform is made, and its specialiser."""
        built = self._build({}, refusal=refusal)
        if built is None:
            return
        self.source, self.graph = built.source, built.graph
        self._fn = built.functions[built.name]
        from srcgrad.analysis.shapes import shapes_follow_from_inputs
        self._shapes_fixed = self.kind != "vjp" and self._backend.specialises_shapes \
            and not getattr(self._fn, "srcgrad_missing", False) \
            and shapes_follow_from_inputs(built.ir)
        self._mutated = tuple(i for i, p in enumerate(built.ir.params) if p in built.ir.mutates)
        self._written = tuple(i for i in self._mutated if i not in self.wrt)
        self._shapes = ShapeSpecialiser(
            Generic(self._fn, built.functions, built.free, built.source, self._lowered,
                    self._target, self.kind, self._single, self.backend,
                    self._backend.specialises_loops),
            self._specialised, self.sources, self._redispatch, self._snapshot.watch)

    @property
    def code(self) -> Generic | None:
        """The generic code as built (its function, module namespace, free names, source);
        None while the transform runs eagerly."""
        return self._shapes.code if self._shapes is not None else None

    def serves(self, values: list) -> Callable | None:
        """The generic function for a plain call with these values, or None where they run
        eagerly: no compiled code, arguments of the transform's own before the caller's,
        or values like some the compiled code failed on (``net.eager_keys``)."""
        eager_keys = self.net.eager_keys
        if self._fn is None or self._prefix or self._bound_defaults or \
                eager_keys and signature(values) in eager_keys:    # functions: at _dispatch
            return None
        return self._fn

    @property
    def _latest(self) -> Callable | None:
        """The newest specialisation, called first (its guard hands other arguments on)."""
        return self._shapes.latest if self._shapes is not None else None

    @_latest.setter
    def _latest(self, fn: Callable | None) -> None:
        if self._shapes is not None:
            self._shapes.latest = fn

    def _probe(self) -> Callable:
        """The generic function that also returns its locals (:meth:`ShapeSpecialiser.probe`)."""
        return self._shapes.probe()

    def _built_params(self) -> list[str]:
        """The generated function's parameter names."""
        return self._shapes.built_params()

    def _build(self, trees: dict, refusal: str | None = None) -> Any:
        """The generic code, its lowered IR kept for the specialisations; with ``trees``,
        the code for pytree arguments of those structures (lowered anew for them)."""
        from srcgrad.build.reverse import build
        try:
            if refusal is not None:
                raise CompileError(refusal)
            if trees:
                built = build(self._compiled_target, self.kind, self.wrt, self._single,
                              self.backend, trees)
            else:
                built, self._lowered = specialise.build(
                    self._compiled_target, self.kind, self.wrt, self._single, self.backend)
        except CompileError as exc:
            argument_objects.fall_back_or_wait(self, exc, trees)   # or built at the call
            return None
        self._snapshot.watch(built.resolved)        # attributes every build bound
        return built

    # ------------------------------------------------------------- the compiled code
    def _for_backend(self, args: tuple) -> Transform:
        """``backend="auto"``: the NumPy, CuPy or Dask transform, by the arrays passed."""
        name = for_arrays(pytree.flatten(list(args))[0]).name
        transform = self._specialised.get(name)
        if transform is None:
            with BUILD_LOCK:                  # one transform for all threads
                transform = self._specialised.get(name)
                if transform is None:
                    fun, kind, wrt, _, strict = self._given
                    transform = Transform(fun, kind, wrt, backend=name, strict=strict)
                    self._specialised[name] = transform
        return transform

    def _compiled_for(self, values: list) -> Callable | None:
        """The compiled function for these arguments: pytree arguments specialise it."""
        trees = argument_structures(self, values) | callable_structures(self, values)
        trees |= argument_objects.object_structures(self, values, found=bool(trees))
        if not trees:
            return self._keywords_left_out(self._fn)
        key = repr(sorted(trees.items()))
        if key not in self._specialised:
            with BUILD_LOCK:                  # unless another thread built it meanwhile
                if key not in self._specialised:
                    built = self._build(trees)
                    self._specialised[key] = built.functions[built.name] if built else None
                    if built is not None:
                        self.source, self.graph = built.source, built.graph
                        self.sources[key] = built.source
                        note_mutated(self, key, built.ir)
        refuse_sharing(self, values, key)
        return self._keywords_left_out(argument_objects.typed(self, key, trees))

    def _keywords_left_out(self, fn: Callable | None) -> Callable | None:
        """The compiled ``fn`` called with one value a parameter, ``**kwargs`` included: it
        takes them without the ``**kwargs`` (which it does not read)."""
        positions = self._positions
        if fn is None or positions is None or len(positions.kinds) == len(
                positions.compiled_values(positions.kinds)):
            return fn
        return lambda *values: fn(*positions.compiled_values(list(values)))

    def __repr__(self) -> str:
        how = "compiled" if self._fn is not None else "eager fallback"
        return f"<srcgrad.{self.kind} of {self._name} ({how})>"

    def _bind(self, args: tuple, kwargs: dict) -> list:
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return list(bound.arguments.values())

    # ------------------------------------------------------------------------ calls
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._snapshot.changed() is not None:  # a global, closure or helper rebound
            with BUILD_LOCK:                      # built anew once, then swapped in whole:
                if self._snapshot.changed() is not None:    # other threads' calls meanwhile
                    fun, kind, wrt, backend, strict = self._given   # see old or new state
                    fresh = object.__new__(type(self))
                    fresh.__init__(fun, kind, wrt, backend=backend, strict=strict)
                    self.__dict__ = fresh.__dict__
        if self._containers or self._snapshot.arrays:   # filled or set since: read again
            reads, refusal = free_arrays(self._snapshot)
            self._reads_tensors = self._reads_tensors or reads
            if refusal is not None:
                raise TypeError(refusal)
        if self._free_refusal is not None:
            raise TypeError(self._free_refusal)
        args, kwargs = self._plain_arguments(args, kwargs)
        positions = self._positions
        if positions is None or self._backend.by_arrays:
            return self._call_parameters(args, kwargs)
        result = self._call_parameters(args, kwargs)    # gradients by parameter: *args whole
        if self.kind == "vjp":
            count = len(self._prefix) + len(args) - positions.npositional
            backward = result[1]
            return result[0], lambda ct: positions.by_position(backward(ct), count)
        if self.kind == "value_and_grad":
            return result[0], positions.pick(result[1], self._single)
        return positions.pick(result, self._single)

    @streams.watched                    # its draws: the safety net's reruns see them again
    def _call_parameters(self, args: tuple, kwargs: dict) -> Any:
        if self._prefix:
            args = self._prefix + args
        latest, backend = self._latest, self._backend
        if backend.by_arrays:
            return self._for_backend(args)(*args[len(self._prefix):], **kwargs)
        try:
            if latest is not None and not kwargs and len(args) == self._nparams and not (
                    self._reads_tensors or nested()):
                result = latest(*args)     # guarded: it hands other signatures to _dispatch
            elif backend.refuses_arrays and self._refused(args, kwargs):
                result = EAGER
            else:
                with backend.compiled_code():   # Dask's: its warn-and-compute fallback raises
                    result = self._dispatch(args, kwargs)
        except PASS_THROUGH:
            raise
        except _ArgumentError as exc:
            raise TypeError(str(exc)) from None
        except Exception as exc:
            return self.net.recover(exc, args, kwargs, self._reads_tensors)
        if result is EAGER:
            return self.net.eager(self._bind(args, kwargs), self._reads_tensors)
        if self._vjp:
            return result[0], self.net.safe_backward(result[1], args, kwargs,
                                                      self._reads_tensors)
        return result

    def _refused(self, args: tuple, kwargs: dict) -> bool:
        """Whether the backend's code cannot take these arguments (Dask arrays of unknown
        chunk sizes): they run eagerly, with a FallbackWarning (``strict``: refused)."""
        reason = self._backend.refusal(pytree.flatten(list(args) + list(kwargs.values()))[0],
                                       self._name)
        if reason is None:
            return False
        self.fall_back(reason)
        return True

    def _redispatch(self, *args: Any) -> Any:
        """What a specialisation's guard calls for arguments it was not made for."""
        return self._dispatch(args, {})

    def _dispatch(self, args: tuple, kwargs: dict) -> Any:
        """Pick and run the code for these arguments: floats, pytrees, shapes, the generic
        code; or answer ``EAGER``.  The safety net of ``__call__`` stands around it."""
        fn = self._fn
        if fn is not None and not kwargs and len(args) == self._nparams:
            for i in self.wrt:
                a = args[i]
                if not (type(a) is float or type(a) is np.ndarray and a.dtype.kind == "f"):
                    self._check(args)
                    break
            eager_keys = self.net.eager_keys
            if eager_keys and signature(args) in eager_keys:
                return EAGER
            if self._reads_tensors or nested() or any(isinstance(a, Tensor) for a in args):
                return EAGER          # differentiated by an outer level: keep the graph
            if all(type(a) is float for a in args):
                return self._shapes.for_floats()(*args)
            if self._mutated:
                refuse_sharing(self, args)
            if any(isinstance(args[i], (dict, list, tuple)) for i in self._written):
                return self.net.written_container(args)
            if all(pytree.is_leaf(args[i]) for i in self.wrt):
                return self._shapes.by_shapes(args) if self._shapes_fixed else fn(*args)
        values = self._bind(args, kwargs)
        self._check(values)
        if self._positions is not None:
            try:
                self._positions.check(values)
            except TypeError as exc:
                raise _ArgumentError(str(exc)) from None
        if other_function(self, values):
            return EAGER                  # not a function, where one is compiled in
        eager_keys = self.net.eager_keys
        if eager_keys and signature(values) in eager_keys or self._reads_tensors \
                or nested() or any(isinstance(v, Tensor) for v in pytree.flatten(values)[0]):
            return EAGER
        if self._mutated:
            refuse_sharing(self, values)
        if any(isinstance(values[i], (dict, list, tuple)) for i in self._written):
            return self.net.written_container(values)
        fn = self._compiled_for(values) if self.fallback_reason is None else None
        return fn(*values) if fn is not None else EAGER

    def _plain_arguments(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """The arguments with every array a plain ndarray: ``np.memmap`` as a view of its
        memory, any other ndarray subclass (``np.matrix``, masked arrays) a TypeError, as
        their semantics are not the plain arrays' the rules are written for."""
        if not kwargs and all(type(a) is float or type(a) is np.ndarray for a in args):
            return args, kwargs
        names = list(self._signature.parameters)[len(self._prefix):]
        shown = names if plain_signature(self._signature) else []
        args = tuple(pytree.plain_leaves(a, f"the argument {shown[i] if i < len(shown) else i}")
                     for i, a in enumerate(args))
        return args, {k: pytree.plain_leaves(v, f"the argument {k}") for k, v in kwargs.items()}

    def _check(self, values: Any) -> None:
        names = list(self._signature.parameters)
        for i in self.wrt:
            if i < len(values):
                try:
                    pytree.check_differentiable(values[i], names[i], vjp=self._vjp)
                except TypeError as exc:
                    raise _ArgumentError(str(exc)) from None


def grad(fun: Callable | None = None, wrt: Any = 0, *, backend: str = DEFAULT_BACKEND,
         strict: bool = False) -> Any:
    """The gradient of a scalar-valued function with respect to argument(s) ``wrt``."""
    if fun is None:
        return lambda f: grad(f, wrt, backend=backend, strict=strict)
    return _made(fun, "grad", wrt, backend, strict)


def value_and_grad(fun: Callable | None = None, wrt: Any = 0, *,
                   backend: str = DEFAULT_BACKEND, strict: bool = False) -> Any:
    """Like ``grad``, returning ``(value, gradient)``."""
    if fun is None:
        return lambda f: value_and_grad(f, wrt, backend=backend, strict=strict)
    return _made(fun, "value_and_grad", wrt, backend, strict)


def vjp(fun: Callable, *args: Any, backend: str = DEFAULT_BACKEND,
        strict: bool = False) -> tuple:
    """``(fun(*args), vjp_fn)``; ``vjp_fn(cotangent)`` gives one gradient per argument."""
    every = tuple(range(len(inspect.signature(fun).parameters)))
    return _made(fun, "vjp", every, backend, strict)(*args)


def _made(fun: Callable, kind: str, wrt: Any, backend: str, strict: bool) -> Transform:
    """The transform made before for these (``grad(f)(x)`` written inline), or a new one."""
    key = tuple(wrt) if isinstance(wrt, list) else wrt
    return TRANSFORMS.get(fun, (kind, key, backend, strict), lambda: Transform(
        fun, kind, wrt, backend=backend, strict=strict))
