"""The safety net behind compiled code: when it raises, the call runs again on the
eager engine.  If that raises too, the error is the answer (NumPy's, or the compiled one of the
same kind, whose traceback shows the generated line); if not, the compiled code has a bug: one
``FallbackWarning`` names it and that signature stays eager (``strict=True`` raises
``CompileError`` instead).  Python floats, which raise where NumPy gives inf or nan, get the
generic code on NumPy floats first.  The runs again print and log nothing (the compiled
code's prints were the call's), and an error raised ``from`` another keeps its cause.
"""

from __future__ import annotations

import linecache
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from srcgrad.codegen import FILTERS_LOCK, array_backend
from srcgrad.errors import CompileError, MissingBackend, NonScalarOutput
from srcgrad.runtime.quiet import muted
from srcgrad.runtime.rules import streams
from srcgrad.transforms import pytree
from srcgrad.transforms.callables import written_container

if TYPE_CHECKING:
    from srcgrad.codegen import Backend
    from srcgrad.transforms.base import BaseTransform
    from srcgrad.transforms.specialise import ShapeSpecialiser

__all__ = ["SafetyNet", "EagerRun", "EAGER", "PASS_THROUGH", "signature", "FILTERS_LOCK"]

EAGER = object()           # what the dispatcher returns for "run this call on the eager engine"
PASS_THROUGH = (CompileError, MemoryError, MissingBackend)
_REFUSALS = (RuntimeError, TypeError, ValueError)   # how the engines say what they cannot do


@dataclass(frozen=True)
class EagerRun:
    """What the safety net needs of its transform to run a call on the eager engine."""

    target: Any                 # the function differentiated
    kind: str
    wrt: tuple[int, ...]
    single: bool
    call: Callable              # calls ``target`` with one value a parameter
    params: list[str]           # the parameters' names
    written: tuple[int, ...]    # positions the code writes into (not differentiated)
    vjp: bool                   # whether the compiled code gives a backward function
    backend: Backend


class SafetyNet:
    """What answers for a transform (``owner``: its ``strict``, ``fallback_reason`` and
    ``fall_back``) when its compiled code raises.  ``bind`` makes a call's arguments one
    value a parameter, ``compiled_for`` gives the compiled function for such values;
    ``shapes``' newest specialisation is dropped when the compiled code fails.  The
    signatures whose compiled code failed stay eager (``eager_keys``); ``outer``: whether
    the function reads Tensors of an outer level."""

    def __init__(self, owner: BaseTransform, run: EagerRun, bind: Callable,
                 compiled_for: Callable, shapes: ShapeSpecialiser | None) -> None:
        self.owner, self.run, self.shapes = owner, run, shapes
        self.bind, self.compiled_for = bind, compiled_for
        self.eager_keys: set = set()

    def eager(self, values: list, outer: bool, compiled: Exception | None = None) -> Any:
        """The call on the eager engine (after the compiled code raised ``compiled``).

        When it fails, the plain function decides: if that raises, its error is the answer
        (the compiled one when of the same kind: its traceback shows the generated line).
        If not, the eager engine cannot run the call either, and that is a CompileError
        naming the reasons (an error NumPy would not raise never reaches the user), except
        ``grad`` of a non-scalar result: a ValueError that points to vjp.  Dask arguments
        are computed into NumPy arrays first (the eager engine is NumPy's)."""
        from srcgrad.transforms.fallback import eager_transform, plain_error
        run, name = self.run, self.owner._name
        values = run.backend.eager_arguments(values)
        try:
            streams.rewind()                          # the draws the compiled code saw
            start = time.perf_counter()
            result = eager_transform(run.target, run.kind, values, run.wrt, run.single,
                                     run.call, outer=outer)
            if self.owner.eager_seconds is None:      # what a fallback costs, measured once
                self.owner.eager_seconds = time.perf_counter() - start
            return (result[0], self._eager_backward(result[1])) if run.kind == "vjp" else result
        except (MemoryError, CompileError):
            raise
        except Exception as exc:
            streams.rewind()
            with muted():                             # its prints came with the first run
                error = plain_error(run.target, values, run.call)
            if error is not None:                     # what the function itself raises
                error = compiled if type(compiled) is type(error) else error
                raise error from error.__cause__      # ``raise ... from e``: its cause kept
            if isinstance(exc, NonScalarOutput):          # grad of a non-scalar result
                raise (compiled if isinstance(compiled, ValueError) else exc) from None
            if getattr(compiled, "not_compiled", False):  # a refusal made at run time
                raise CompileError(f"srcgrad does not compile {name} for these "
                                   f"arguments: {compiled}") from None
            if type(compiled) is type(exc) and isinstance(exc, _REFUSALS):
                raise CompileError(                       # both refuse alike; NumPy does not
                    f"srcgrad cannot differentiate {name} with these arguments: both "
                    f"engines raised {type(exc).__name__}: {exc}") from compiled
            if compiled is not None:
                raise CompileError(f"internal error: the compiled code of {name} raised "
                                   f"{type(compiled).__name__}: {compiled}, and the eager "
                                   f"engine cannot run it either ({type(exc).__name__}: "
                                   f"{exc}); please report it") from compiled
            reason = self.owner.fallback_reason or "its compiled code failed"
            raise CompileError(f"the eager engine cannot run {name} either "
                               f"({type(exc).__name__}: {exc}); {reason}") from exc

    def _eager_backward(self, backward: Callable) -> Callable:
        """The eager vjp's backward function: the forward pass ran as NumPy does, so an
        error of the backward pass is srcgrad's, said as a CompileError."""
        def vjp_fn(cotangent: Any) -> Any:
            cotangent = pytree.plain_leaves(cotangent, "the cotangent")
            try:
                return backward(cotangent)
            except PASS_THROUGH:
                raise
            except Exception as exc:
                raise CompileError(f"the eager engine cannot differentiate {self.owner._name} "
                                   f"({type(exc).__name__}: {exc})") from exc
        return vjp_fn

    def recover(self, exc: Exception, args: tuple, kwargs: dict, outer: bool) -> Any:
        """The compiled code raised ``exc``: the eager engine's answer, or the error (the
        runs again take the path the compiled code took: their prints and logging records
        are dropped, the compiled code's were the call's)."""
        with muted():
            return self._recover(exc, args, kwargs, outer)

    def _recover(self, exc: Exception, args: tuple, kwargs: dict, outer: bool) -> Any:
        values = self.bind(args, kwargs)
        if not self.run.backend.eager_takes_arrays:
            self._refuse_before_eager(exc, values)
        if isinstance(exc, (ArithmeticError, ValueError)) and \
                self.owner.fallback_reason is None and any(
                type(leaf) is float for v in values for leaf in pytree.flatten(v)[0]):
            result = self._with_numpy_floats(values, outer)
            if result is not EAGER:
                return result
        result = self.eager(values, outer, exc)
        self.internal_error(exc, signature(values))
        return result

    def _refuse_before_eager(self, exc: Exception, values: list) -> None:
        """The answer, before the eager engine computes the arguments (Dask's, on the
        client), to compiled code that raised ``exc``: where the library refuses what the
        code asks (Dask: what it cannot do lazily), a CompileError at the user's line with
        ``strict``; the function's own error where it fails alike on these arrays; with
        ``strict``, a CompileError for anything else."""
        from srcgrad.transforms.fallback import plain_error
        run, name = self.run, self.owner._name
        refusal = run.backend.own_refusal(exc, name, _at(exc))
        if refusal is not None:
            exc.not_compiled = True           # the library cannot do this lazily, or at all
            if self.owner.strict:
                raise CompileError(refusal) from None
            return
        with run.backend.plain_code():        # functions Dask lacks raise
            streams.rewind()
            error = plain_error(run.target, values, run.call)
        if error is not None and type(error) is type(exc):
            raise exc from exc.__cause__      # the function itself fails on these arrays
        if self.owner.strict:
            raise CompileError(f"internal error: the compiled code of {name} raised "
                               f"{type(exc).__name__}: {exc}{_at(exc)}; please report it") \
                from exc

    def _with_numpy_floats(self, values: list, outer: bool) -> Any:
        """Python floats raise where NumPy gives inf or nan (``1.0 / 0.0`` in an adjoint,
        ``math.exp(1000.0)`` in the float specialisation): the generic code on NumPy floats
        answers as the eager engine would, unless the function itself raises."""
        from srcgrad.transforms.fallback import plain_error
        run = self.run
        numpy_floats = [_map_floats(v, np.float64) for v in values]
        try:
            fn = self.compiled_for(numpy_floats)
            streams.rewind()
            result = fn(*numpy_floats) if fn is not None else EAGER
        except Exception:  # noqa: BLE001 - the function's own error, or the eager engine
            result = EAGER
        states = streams.current().states() if streams.current() else []
        streams.rewind()                          # the plain call draws as the first did
        error = plain_error(run.target, values, run.call)
        streams.Watch.restore(states)             # and the streams are as the result left them
        if error is not None:
            raise error from error.__cause__
        if result is EAGER:
            return EAGER
        if run.vjp:
            return result[0], self.safe_backward(result[1], tuple(values), {}, outer)
        value, grads = result if run.kind == "value_and_grad" else (None, result)
        grads = tuple(_floats_like(g, values[i]) for g, i in zip(
            (grads,) if run.single else grads, run.wrt))
        grads = grads[0] if run.single else grads
        return (value, grads) if run.kind == "value_and_grad" else grads

    def written_container(self, values: Any) -> Any:
        """The code writes into what an argument not differentiated holds: compiled for an
        array, so a list, tuple or dict of arrays runs eagerly (``strict``: refused)."""
        reason = written_container(self.owner._name, self.run.params, values, self.run.written)
        key = signature(values)
        if not self.owner.strict:
            if key in self.eager_keys:         # said already (another thread's call)
                return EAGER
            self.eager_keys.add(key)
        self.owner.fall_back(reason, arguments=True)
        return EAGER

    def internal_error(self, exc: Exception, key: Any) -> None:
        """The compiled code raised ``exc`` where the eager engine did not: the signature
        ``key`` runs eagerly from now on, with one FallbackWarning (``strict``: refused)."""
        name = self.owner._name
        if getattr(exc, "not_compiled", False):     # a refusal the lowering could not make
            message = f"the compiled code of {name} does not model these arguments: {exc}"
            strictly, cause = message, None
        else:
            message = (f"internal error: the compiled code of {name} raised "
                       f"{type(exc).__name__}: {exc}, where the eager engine does not")
            strictly, cause = message + "; please report it", exc
        if not self.owner.strict:
            self.eager_keys.add(key)
            if self.shapes is not None:
                self.shapes.latest = None
        self.owner.fall_back(message, arguments=True, strictly=strictly, cause=cause)

    def safe_backward(self, backward: Callable, args: tuple, kwargs: dict,
                      outer: bool) -> Callable:
        """A vjp's backward function, with the same safety net as the forward call."""
        forward = streams.current()             # what the forward call drew, for a rerun

        def vjp_fn(cotangent: Any) -> Any:
            cotangent = pytree.plain_leaves(cotangent, "the cotangent")
            try:
                with self.run.backend.compiled_code():
                    return backward(cotangent)
            except PASS_THROUGH:
                raise
            except Exception as exc:
                values = self.bind(args, kwargs)
                if not self.run.backend.eager_takes_arrays:
                    self._refuse_before_eager(exc, values)
                with streams.again(forward), muted():     # the forward pass ran already
                    grads = self.eager(values, outer, exc)[1](cotangent)
                self.internal_error(exc, signature(values))
                return grads
        return vjp_fn


def _at(exc: BaseException) -> str:
    """`` at file.py:12  code``: the user's line whose generated code raised ``exc`` (the
    comment above the generated line in the transform's function), or nothing."""
    tb, where = exc.__traceback__, None
    while tb is not None and where is None:          # the outermost: the transform's own
        if tb.tb_frame.f_code.co_filename.startswith("<srcgrad "):
            where = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    if where is None:
        return ""
    lines = linecache.getlines(where[0])[:where[1]]
    comment = next((line.strip()[2:] for line in reversed(lines)
                    if line.strip().startswith("# ")), None)
    return f" at {comment.removeprefix('adjoint of ')}" if comment else ""


def _map_floats(value: Any, to: Callable) -> Any:
    """``value`` with its Python float leaves passed through ``to``."""
    flat, structure = pytree.flatten(value)
    return pytree.unflatten(structure, [to(v) if type(v) is float else v for v in flat])


def _floats_like(grad: Any, original: Any) -> Any:
    """A gradient whose leaves are Python floats where the argument's were."""
    flat, structure = pytree.flatten(grad)
    kinds = pytree.flatten(original)[0]
    if len(kinds) != len(flat):
        return grad
    return pytree.unflatten(structure, [float(g) if type(o) is float and g is not None else g
                                        for g, o in zip(flat, kinds)])


def _key(values: Any) -> Any:
    """A hashable signature: types, shapes and dtypes, through pytrees."""
    if isinstance(values, (list, tuple)):
        return (type(values), tuple(_key(v) for v in values))
    if isinstance(values, dict):
        return (dict, tuple((repr(k), _key(values[k])) for k in sorted(values, key=repr)))
    if isinstance(values, (np.ndarray, np.generic)) or array_backend(values) is not None:
        return (type(values), values.shape, values.dtype.str)
    return type(values)


def signature(values: Any) -> tuple:
    return tuple(_key(v) for v in values)
