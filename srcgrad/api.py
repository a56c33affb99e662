"""The transforms users call: ``grad``, ``value_and_grad``, ``vjp``, ``show``.

A transform compiles when it is created (ahead of time): ``.source`` and ``.graph`` can be read
at once.  When the compiler cannot handle the function it falls back to the eager engine with
one ``FallbackWarning`` naming the reason (``strict=True`` raises the ``CompileError``).
"""

from __future__ import annotations

import ast
import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.errors import CompileError, FallbackWarning

__all__ = ["grad", "value_and_grad", "vjp", "show", "Transform"]


class Transform:
    """A transformed function: call it; read ``.source``, ``.graph``, ``.fallback_reason``."""

    def __init__(self, fun: Callable, kind: str, wrt: Any = 0, *, backend: str = "numpy",
                 strict: bool = False) -> None:
        functools.update_wrapper(self, fun)
        self.__wrapped__ = fun
        self.kind, self.backend, self.strict = kind, backend, strict
        self._signature = inspect.signature(fun)
        names = list(self._signature.parameters)
        self._nparams = len(names)
        self._single = not isinstance(wrt, (tuple, list))
        self.wrt = tuple(_position(w, names, fun) for w in ((wrt,) if self._single else wrt))
        self.source: str | None = None
        self.graph = None
        self.fallback_reason: str | None = None
        self._fn: Callable | None = None
        self._specialised: dict[str, Callable | None] = {}
        self.sources: dict[str, str] = {}     # the specialisations' sources, by signature
        self._namespace: dict = {}
        self._free: dict = {}
        self._probe_fn: Callable | None = None
        self._latest: Callable | None = None    # the newest shape specialisation
        self._shapes_fixed = False
        if backend == "auto":               # decided at the first call, by the arrays passed
            return
        built = self._build({}, stacklevel=4)
        if built is not None:
            self.source, self.graph = built.source, built.graph
            self._fn = built.functions[built.name]
            self._namespace, self._free = built.functions, built.free
            from srcgrad.shapes import shapes_follow_from_inputs
            self._shapes_fixed = kind != "vjp" and backend == "numpy" and \
                shapes_follow_from_inputs(built.ir)

    def _build(self, trees: dict, stacklevel: int) -> Any:
        from srcgrad.compiler import build
        try:
            return build(self.__wrapped__, self.kind, self.wrt, self._single, self.backend,
                         trees)
        except CompileError as exc:
            if self.strict:
                raise
            if self.fallback_reason is None:
                self.fallback_reason = str(exc)
                warnings.warn(f"srcgrad falls back to the eager engine for "
                              f"{self.__wrapped__.__qualname__}: {exc}", FallbackWarning,
                              stacklevel=stacklevel)
            return None

    def _by_shapes(self, args: tuple) -> Any:
        """Code specialised for the arguments' shapes and dtypes, learnt at a first call.

        The first call with a new signature runs the generic code, which also reports the
        shape of every value; the code built from those facts (no run-time shape checks, sizes
        folded into constants, matrix products written out) serves the later calls.
        """
        key = tuple((a.shape, a.dtype) if type(a) is np.ndarray else type(a) for a in args)
        fn = self._specialised.get(key)
        if fn is not None:
            return fn(*args)
        if len(self._specialised) >= 16:
            return self._fn(*args)
        result, values = self._probe()(*args)
        facts = {name: (v.shape, v.dtype) for name, v in values.items()
                 if isinstance(v, (np.ndarray, np.generic))}
        facts.update({name: ((), float) for name, v in values.items() if type(v) is float})
        from srcgrad.compiler import build
        guard = {name: facts[name] for name in built_params(self) if name in facts}
        built = build(self.__wrapped__, self.kind, self.wrt, self._single, self.backend,
                      facts=facts, guard=(guard, self._dispatch))
        self._specialised[key] = self._latest = built.functions[built.name]
        self.sources[repr(key)] = built.source
        return result

    def _probe(self) -> Callable:
        """The generic function, changed to return its local values along with its result."""
        if self._probe_fn is None:
            tree = ast.parse(self.source)
            main = next(n for n in tree.body if isinstance(n, ast.FunctionDef)
                        and n.name == self._fn.__name__)
            for node in main.body:
                if isinstance(node, ast.Return):
                    node.value = ast.Tuple([node.value, ast.Call(ast.Name("locals", ast.Load()),
                                                                 [], [])], ast.Load())
            namespace = dict(self._namespace)
            exec(compile(ast.fix_missing_locations(tree), self._fn.__code__.co_filename,
                         "exec"), namespace)
            self._probe_fn = namespace[main.name]
        return self._probe_fn

    def _for_backend(self, args: tuple) -> Transform:
        """``backend="auto"``: the NumPy or the CuPy transform, by the arrays passed."""
        on_device = any(hasattr(a, "__cuda_array_interface__") for a in args)
        name = "cupy" if on_device else "numpy"
        transform = self._specialised.get(name)
        if transform is None:
            transform = Transform(self.__wrapped__, self.kind,
                                  self.wrt[0] if self._single else self.wrt, backend=name,
                                  strict=self.strict)
            self._specialised[name] = transform
        return transform

    def _scalar_version(self) -> Callable:
        """The code specialised for Python floats (``math`` functions), built once."""
        fn = self._specialised.get("floats")
        if fn is None:
            from srcgrad.compiler import build
            guard = {name: ((), float) for name in built_params(self)}
            try:
                built = build(self.__wrapped__, self.kind, self.wrt, self._single, self.backend,
                              scalar=True, guard=(guard, self._dispatch))
            except CompileError:
                fn = self._fn
            else:
                fn = self._latest = built.functions[built.name]
                self.sources["floats"] = built.source
            self._specialised["floats"] = fn
        return fn

    def _compiled_for(self, values: list) -> Callable | None:
        """The compiled function for these arguments: pytree arguments specialise it."""
        from srcgrad import pytree
        trees = {i: pytree.flatten(values[i])[1] for i in self.wrt
                 if not pytree.is_leaf(values[i])}
        if not trees:
            return self._fn
        key = repr(sorted(trees.items()))
        if key not in self._specialised:
            built = self._build(trees, stacklevel=5)
            self._specialised[key] = built.functions[built.name] if built else None
            if built is not None:
                self.source, self.graph = built.source, built.graph
                self.sources[key] = built.source
        return self._specialised[key]

    def __repr__(self) -> str:
        how = "compiled" if self._fn is not None else "eager fallback"
        return f"<srcgrad.{self.kind} of {self.__wrapped__.__qualname__} ({how})>"

    def _bind(self, args: tuple, kwargs: dict) -> list:
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return list(bound.arguments.values())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        latest = self._latest
        if latest is not None and not kwargs and len(args) == self._nparams:
            return latest(*args)      # guarded: it hands other signatures to _dispatch
        return self._dispatch(*args, **kwargs)

    def _dispatch(self, *args: Any, **kwargs: Any) -> Any:
        """Pick the code for these arguments: floats, pytrees, shapes, or the generic code."""
        if self.backend == "auto":
            return self._for_backend(args)(*args, **kwargs)
        fn = self._fn
        if fn is not None and not kwargs and len(args) == self._nparams:
            if all(type(a) is float for a in args):
                return self._scalar_version()(*args)
            if not any(isinstance(args[i], (dict, list, tuple)) for i in self.wrt):
                return self._by_shapes(args) if self._shapes_fixed else fn(*args)
        values = self._bind(args, kwargs)
        fn = self._compiled_for(values) if self.fallback_reason is None else None
        if fn is not None:
            return fn(*values)
        from srcgrad.fallback import eager_transform
        return eager_transform(self.__wrapped__, self.kind, values, self.wrt, self._single)


def built_params(transform: Transform) -> list[str]:
    """The generated function's parameter names (the user's, possibly renamed)."""
    return list(inspect.signature(transform._fn).parameters)


def _position(w: Any, names: list[str], fun: Callable) -> int:
    if isinstance(w, int):
        if not 0 <= w < len(names):
            raise ValueError(f"wrt={w} is out of range for {fun.__qualname__}, which takes "
                             f"{len(names)} arguments")
        return w
    if w not in names:
        raise ValueError(f"{fun.__qualname__} has no argument named {w!r}")
    return names.index(w)


def grad(fun: Callable | None = None, wrt: Any = 0, *, backend: str = "numpy",
         strict: bool = False) -> Any:
    """The gradient of a scalar-valued function with respect to argument(s) ``wrt``."""
    if fun is None:
        return lambda f: Transform(f, "grad", wrt, backend=backend, strict=strict)
    return Transform(fun, "grad", wrt, backend=backend, strict=strict)


def value_and_grad(fun: Callable | None = None, wrt: Any = 0, *, backend: str = "numpy",
                   strict: bool = False) -> Any:
    """Like ``grad``, returning ``(value, gradient)``."""
    if fun is None:
        return lambda f: Transform(f, "value_and_grad", wrt, backend=backend, strict=strict)
    return Transform(fun, "value_and_grad", wrt, backend=backend, strict=strict)


_VJP_CACHE: dict = {}


def vjp(fun: Callable, *args: Any, backend: str = "numpy", strict: bool = False) -> tuple:
    """``(fun(*args), vjp_fn)``; ``vjp_fn(cotangent)`` gives one gradient per argument."""
    key = (fun, backend, strict)
    transform = _VJP_CACHE.get(key)
    if transform is None:
        n = len(inspect.signature(fun).parameters)
        transform = _VJP_CACHE[key] = Transform(fun, "vjp", tuple(range(n)), backend=backend,
                                                strict=strict)
    return transform(*args)


def show(fn: Any) -> None:
    """Print a transformed function's generated source (or why it fell back)."""
    source = getattr(fn, "source", None)
    if source is None:
        print(f"# {getattr(fn, '__qualname__', fn)} runs on the eager engine: "
              f"{getattr(fn, 'fallback_reason', 'not a srcgrad transform')}")
    else:
        print(source)
