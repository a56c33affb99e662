"""What every build of a transform shares, reverse (:mod:`srcgrad.build.reverse`) and forward
(:mod:`srcgrad.build.forward`): the error handling around it, the parts of the module it
generates (functions, helpers, free names, the other transforms' functions it embeds, the
callees' functions emitted once each), and writing and loading that module's text.
"""

from __future__ import annotations

import ast
import functools
import gc
import importlib
import linecache
import threading
from collections.abc import Callable
from typing import Any

from srcgrad.codegen import (
    NotInBackend,
    as_backend,
    eliminate_dead_code,
    finish_lists,
    load,
    located,
    render,
    short_filename,
)
from srcgrad.errors import CompileError, Location, MissingBackend
from srcgrad.frontend import generated_helpers as generated
from srcgrad.frontend.freshness import RESOLVED
from srcgrad.frontend.parse import with_recursion_room
from srcgrad.ir import Function, Stmt, bind_free, fresh_name

__all__ = ["guarded", "failed_at", "ModuleParts", "where", "args_of", "BUILD_LOCK"]

BUILD_LOCK = threading.RLock()
"""Held by whatever builds (lowers, emits, compiles, loads a module): one build at a time in
the process.  CPython fails when two threads make or compile ``ast`` trees at once, and a
build changes process-wide settings (the recursion limit, the garbage collector)."""


def _one_at_a_time(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with BUILD_LOCK:
            return fn(*args, **kwargs)
    return locked


@_one_at_a_time
@with_recursion_room
def guarded(fun: Any, work: Callable[[], Any]) -> Any:
    """``work()``, a build of ``fun``: the attributes bound meanwhile recorded on the result
    (``built.resolved``, see :data:`srcgrad.frontend.freshness.RESOLVED`), and any error but a
    CompileError reported as an internal error at the construct being compiled.

    Python's cyclic garbage collector is paused meanwhile: a build makes many objects that
    live on (trees, the IR, the module), and the collections it triggered grew faster than
    the build (benchmarks/build_time.py, CPU time, grad() and the first call of the chain:
    1.39 s with them and 1.30 s without at 1,000 statements, 3.24 s and 2.36 s at 2,000).
    What the build leaves as garbage is collected after it, as any garbage is."""
    token = RESOLVED.set([])
    collecting = gc.isenabled()
    gc.disable()
    try:
        out = work()
        built = out[0] if isinstance(out, tuple) else out
        built.resolved = RESOLVED.get()
        return out
    except CompileError as exc:          # one raised without a place: the user's line
        exc.locate(failed_at(fun, exc.__traceback__))
        raise
    except MemoryError:
        raise
    except NotInBackend as exc:          # the backend's library lacks a function
        raise CompileError(str(exc), failed_at(fun, exc.__traceback__)) from None
    except RecursionError:
        raise CompileError("the function is nested too deeply for the compiler (Python's "
                           "recursion limit was reached)", failed_at(fun, None)) from None
    except Exception as exc:
        raise CompileError(f"internal error of the compiler ({type(exc).__name__}: {exc}); "
                           "please report it", failed_at(fun, exc.__traceback__)) from exc
    finally:
        if collecting:
            gc.enable()
        RESOLVED.reset(token)


def failed_at(fun: Any, tb: Any) -> Location | None:
    """Where the compiler was when it failed: the statement being lowered or emitted (the
    innermost frame that knows one), else the function's first line."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        owner = frame.f_locals.get("self")
        src = getattr(owner, "src", None)
        if src is not None and hasattr(src, "filename") and getattr(owner, "line", 0):
            return Location(src.filename, owner.line, 0, 0, src.line(owner.line), src.name)
        st, fn = frame.f_locals.get("st"), getattr(owner, "fn", None)
        if isinstance(st, Stmt) and st.line and isinstance(fn, Function):
            line = linecache.getline(fn.filename, st.line)
            return Location(fn.filename, st.line, 0, 0, line, fn.name)
    code = getattr(fun, "__code__", None)
    if code is None:
        return None
    line = linecache.getline(code.co_filename, code.co_firstlineno)
    return Location(code.co_filename, code.co_firstlineno, 0, 0, line,
                    getattr(fun, "__name__", "?"))


class ModuleParts:
    """The functions, helpers and free names of one generated module, and the other
    transforms' generated functions it embeds (by source, under names of its own).  A kind
    of build derives from it, with its emitter."""

    def __init__(self, ir: Function) -> None:
        self.names: dict[Any, str] = {}         # a callee's function, by the kind's key
        self.functions: list[ast.FunctionDef] = []
        self.helpers: dict[str, Any] = {}
        self.temps: set[str] = set()
        self.free: dict[str, Any] = dict(ir.free)
        self.in_progress: list[Any] = []
        self.taken = set(ir.used)
        self.embedded: dict[Any, str] = {}
        self.embedded_free: set[str] = set()

    def bind_free(self, ir: Function) -> None:
        """Bind the user's values that ``ir`` (a callee, a branch, a loop body) reads by
        name; two values under one name are refused, never one silently taken for both."""
        bind_free(self.free, ir)

    def embedded_name(self, fn: Any, base: str, ir: Function) -> str:
        """The module's name for another transform's generated function it calls (a name
        no variable of ``ir`` and no function of the module has)."""
        name = self.embedded.get(fn)
        if name is None:
            name = self.embedded[fn] = fresh_name(base, self.taken | ir.used)
            ir.used.add(name)
            self.taken.add(name)
            for key, value in generated.free_of(fn).items():     # what its code reads
                self.embedded_free.add(key)
                if self.free.setdefault(key, value) is not value:
                    raise CompileError(f"two functions read different values named {key}; "
                                       "srcgrad cannot put both in one generated module")
        return name

    def callee(self, key: Any, callee: Any, label: str | None, suffix: str,
               emit: Callable[[Function, str, bool], Any]) -> str:
        """The name of the function for ``callee`` (a user function, or a block: a branch or
        a loop body) kept under ``key``; the first time, ``callee`` is lowered (a block is
        already), named ``<label>_<suffix>`` and emitted by ``emit(ir, name, block)``."""
        name = self.names.get(key)
        if name is not None:
            return name
        block = isinstance(callee, Function)
        if callee in self.in_progress and not block:
            raise CompileError(f"{callee.__name__} calls itself (recursion is not compiled "
                               "yet)")
        base = label or (callee.name if block else callee.__name__)
        base = "lambda" if base == "<lambda>" else base
        ir = callee if block else self.lower(callee)
        self.taken |= ir.used                       # its names first: the function's avoid them
        name = self.names[key] = fresh_name(f"{base}_{suffix}", self.taken)
        self.in_progress.append(callee)
        self.bind_free(ir)
        emit(ir, name, block)
        self.in_progress.pop()
        return name

    def lower(self, callee: Any) -> Function:
        """A callee's IR, lowered for this module (the front end is imported by a build, not
        by ``import srcgrad``)."""
        from srcgrad.build.lowering import lower_function
        return lower_function(callee)

    def embedding(self, em: Any, ir: Function) -> None:
        """Let the emitter ``em`` of ``ir`` call other transforms' generated functions,
        under this module's names for them."""
        em.tracer.embed = lambda fn, base: self.embedded_name(fn, base, ir)

    def keep(self, em: Any, ir: Function, name: str, params: list[str], body: list[ast.stmt],
             pure: set[str] | None) -> ast.FunctionDef:
        """The function ``name`` that ``em`` emitted from ``ir``, its lists finished and, with
        ``pure`` (what may go unread), its dead code removed; kept in the module with the
        helpers and temporaries it uses."""
        fn = ast.FunctionDef(name=name, args=args_of(params), body=body, decorator_list=[],
                             returns=None, type_params=[], lineno=0)
        finish_lists(em, fn)
        if pure is not None:
            eliminate_dead_code(fn, pure)
        self.functions.append(fn)
        self.helpers.update(em.tracer.helpers)
        lowering_temps = {st.target for st in ir.body if st.kind == "prim"
                          and st.target not in ir.source_names}
        self.temps |= em.tracer.temps | ir.inline | lowering_temps
        return fn

    def finish(self, ir: Function, title: str, label: str, backend: Any, main: str,
               facts: dict[str, tuple] | None = None) -> tuple[str, dict]:
        """The module's text and its loaded namespace (a stand-in that raises for ``main``
        when the backend's library is missing); ``facts``: the shapes of ``main``'s locals
        that the module is specialised for (its backend may fuse kernels from them)."""
        backend = as_backend(backend)
        self.free, copies = generated.split_free(self.free, self.functions, self.embedded_free)
        self.helpers.update(copies)
        try:
            text = render(self.functions, self.helpers, self.temps, title, self.free, backend,
                          facts, main)
        except ValueError as exc:             # two functions of one name
            raise CompileError(str(exc), Location(ir.filename, ir.firstline, 0, 0, "",
                                                  ir.name)) from None
        try:
            if backend.library is not None:     # numba: the text alone would run without it
                importlib.import_module(backend.library)
            functions = load(text, label, self.free, backend, fused=facts is not None)
            generated.register(functions, self.helpers, self.free)
        except ImportError as exc:             # backend="cupy" without CuPy: the source stands
            what = "its array library" if backend.library in (None, backend.module) \
                else backend.library
            functions = {main: _missing_backend(backend.name, what, exc, backend.extra or "cuda")}
        return text, functions


def _missing_backend(backend: str, what: str, exc: Exception, extra: str) -> Any:
    def unavailable(*args: Any) -> Any:
        raise MissingBackend(f"backend={backend!r} needs {what}: {exc} "
                             f"(pip install srcgrad[{extra}])")
    unavailable.srcgrad_missing = True          # no specialisation can run either
    return unavailable


def where(ir: Function) -> str:
    """``file:line`` of the function; for a module srcgrad generated (a transform of a
    transform), the user's line it came from."""
    if not ir.filename.startswith("<srcgrad "):
        return f"{short_filename(ir.filename)}:{ir.firstline}"
    return f"generated from {located(ir.filename, ir.firstline + 1, '')[1].split('  ')[0]}"


def args_of(names: list[str]) -> ast.arguments:
    """The parameters of a generated function: ``names``, positional."""
    return ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in names], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
