"""No user name can shadow a name the generated code needs.

First, what the generated modules need: every name a module of grad, value_and_grad, jvp and
hessian (NumPy, numba and Dask backends; generic and specialised code) binds at its top level
or reads as a global is either reserved (the compiler renames a user's name that is one) or
a function the module defines itself, named afresh.  Then the sweep: every reserved name, and
the generated functions' names, used by a program as a global, a local, an argument and an
``import numpy as NAME``, in batches: the gradient must be the eager engine's, on a first and
a second call of another shape (the shape guard's fallback), with the arguments unchanged.
"""

from __future__ import annotations

import ast
import builtins
import functools
import keyword
import warnings

import numpy as np
import pytest
from compiled_helpers import define
from conftest import numerical_grad
from program_generator import generate

import srcgrad
from srcgrad.build.lowering import RESERVED
from srcgrad.transforms import pytree
from srcgrad.transforms.fallback import eager_transform

# ------------------------------------------------------------------------ what modules need
_LOOPS = """
def f(x, w):
    acc = 0.0
    for k in range(3):
        acc = acc + np.sum(np.tanh(x * w[k]) ** 2)
        if acc > 50.0:
            break
    h = np.maximum(x @ np.ones((x.shape[-1], 2)), 0.1)
    parts = [np.sum(h), np.mean(x ** 2)]
    return acc + sum(parts) + np.linalg.norm(x) + np.max(x)
"""


def _module_names(source: str) -> tuple[set[str], set[str]]:
    """(names a module binds at its top level, global names its functions read)."""
    tree = ast.parse(source)
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign):
            bound |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    read: set[str] = set()
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        local = {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)}     # nested ones too
        local |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)
                  and isinstance(n.ctx, ast.Store)}
        local |= {n.name for n in ast.walk(fn) if isinstance(n, ast.FunctionDef) and n is not fn}
        read |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)
                 and isinstance(n.ctx, ast.Load) and n.id not in local}
    return bound, read


def _backends() -> list[str]:
    found = ["numpy"]
    for backend, module in (("numba", "numba"), ("dask", "dask.array")):
        try:
            __import__(module)
            found.append(backend)
        except ImportError:
            pass
    return found


def _sources(fn, args, backend: str) -> list[str]:
    """The texts of ``fn``'s transforms on ``backend``, after two calls (specialised too)."""
    texts = []

    def run(transform, *call) -> None:
        try:
            transform(*call)
        except srcgrad.CompileError:      # refused (the fallback too): its text stands
            pass
        texts.extend(s for s in (getattr(transform, "source", None),
                                 *getattr(transform, "sources", {}).values()) if s)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for make in (srcgrad.grad, srcgrad.value_and_grad):
            t = make(fn, wrt=tuple(range(len(args))), backend=backend)
            run(t, *args)
            run(t, *args)                      # specialised
        if backend == "numpy":
            run(srcgrad.jvp(fn), tuple(args), tuple(_ones(a) for a in args))
            run(srcgrad.hessian(fn, wrt=0), *args)
    return texts


def _ones(value):
    """A tangent of ones with ``value``'s structure."""
    flat, structure = pytree.flatten(value)
    return pytree.unflatten(structure, [np.ones_like(np.asarray(v, float)) for v in flat])


def _corpus():
    rng = np.random.default_rng(0)
    yield define(_LOOPS, {"np": np}), [rng.uniform(0.2, 1.0, (3, 4)), rng.uniform(0.2, 1.0, 3)]
    for seed in range(6):
        program = generate(seed)
        yield define(program.source, {}, name="f"), list(program.args)


@pytest.mark.parametrize("backend", _backends())
def test_every_name_a_generated_module_needs_is_reserved_or_its_own(backend):
    for fn, args in _corpus():
        user = set(fn.__globals__)
        texts = _sources(fn, args, backend)        # a hessian reads its jvp's functions
        own = {n.name for text in texts for n in ast.parse(text).body
               if isinstance(n, ast.FunctionDef)}
        for text in texts:
            bound, read = _module_names(text)
            needed = (bound | read) - own - user
            assert needed <= RESERVED, sorted(needed - RESERVED)


# ------------------------------------------------------------------------------- the sweep
@functools.cache
def _names() -> list[str]:
    """Every name the generated modules of a program with loops bind or read (its helpers,
    its own functions), the backends' module names, and every eighth other reserved name."""
    fn, args = next(_corpus())
    needed = {"dispatch", "locals", "min", "max", "da", "numba", "njit", "prange", "math",
              "np", "f_grad", "f_vjp", "d_y", "g", "total"}
    for text in _sources(fn, args, "numpy"):
        bound, read = _module_names(text)
        needed |= bound | read
    names = needed | set(sorted(RESERVED - needed)[::8])
    return sorted(n for n in names if n.isidentifier() and not keyword.iskeyword(n)
                  and not n.startswith("__") and n not in fn.__globals__.keys() - RESERVED)


BATCH = 48
TERMS = ["np.sum(np.tanh(y @ w))", "np.mean(y ** 2)", "np.sum(np.maximum(y, 0.3) * w[0])",
         "np.sum(np.exp(-y) / (1.0 + w[1]))", "np.max(y)", "np.sum(np.where(y > 0.5, y, 0.1))",
         "np.sum(np.sqrt(w * w + 1.0))", "np.linalg.norm(y)", "np.sum(y[1:] * y[:-1])",
         "np.sum(np.abs(y - 0.6))"]


def _program(names: list[str], form: str) -> tuple[str, dict, list]:
    """A module whose ``f(y, w, ...)`` uses ``names`` in ``form``; its namespace; the
    constants passed for the names' arguments."""
    alias = "np" if "np" not in names else "numpy_"
    consts = [round(0.25 + 0.125 * k, 3) for k in range(len(names))]
    terms = [TERMS[k % len(TERMS)].replace("np.", f"{alias}.") for k in range(len(names))]
    ns: dict = {alias: np}
    params, body = ["y", "w"], []
    if form == "global":
        ns.update(zip(names, consts))
    elif form == "local":
        body = [f"    {n} = {c}" for n, c in zip(names, consts)]
    elif form == "argument":
        params += names
    uses = [f"{n}.sum({n}.sin(y)) * {c}" if form == "import" else f"{t} * {n}"
            for n, c, t in zip(names, consts, terms)]
    if form == "import":
        ns.update((n, np) for n in names)
    body += ["    total = 0.0"] + [f"    total = total + {u}" for u in uses]
    source = f"def f({', '.join(params)}):\n" + "\n".join(body) + "\n    return total\n"
    return source, ns, consts if form == "argument" else []


def _batches(form: str) -> list[list[str]]:
    names = [n for n in _names() if form != "import" or n != "total"]   # the sum itself
    return [names[i:i + BATCH] for i in range(0, len(names), BATCH)]


@pytest.mark.parametrize("form", ["global", "local", "argument", "import"])
def test_user_names_never_shadow_the_generated_code(form):
    rng = np.random.default_rng(1)
    for batch in _batches(form):
        source, ns, extra = _program(batch, form)
        fn = define(source, ns, name="f")
        transform = srcgrad.grad(fn, wrt=(0, 1), strict=True)
        for shape in (4, 6):                     # a first call, then one the guard sends back
            y, w = rng.uniform(0.2, 1.0, shape), rng.uniform(0.2, 1.0, shape)
            args = [y, w, *extra]
            before = [np.copy(a) for a in args]
            got = transform(*args)
            expected = eager_transform(fn, "grad", list(args), (0, 1), False)
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12, err_msg=source)
            for a, b in zip(args, before):
                np.testing.assert_array_equal(a, b)


NUMPY_NAMED = sorted(n for n in RESERVED if callable(vars(np).get(n))
                     and hasattr(builtins, n))


@pytest.mark.parametrize("name", NUMPY_NAMED)
def test_a_numpy_function_imported_under_a_builtin_name(name):
    """``from numpy import min``: the user's ``min`` is NumPy's, the generated code's is
    Python's; each computes what it names."""
    ns = {"np": np}
    fn = define(f"from numpy import {name}\n\ndef f(y, w):\n"
                f"    return np.sum(np.sin(y) * w) + np.sum({name}(y * w))\n", ns, name="f")
    y, w = np.array([0.3, 0.9, 0.5]), np.array([1.5, -0.5, 2.0])
    try:
        with np.errstate(all="ignore"):
            plain = float(fn(y, w))
    except Exception:  # noqa: BLE001 - NumPy's function takes no such call: nothing to check
        return
    if not np.isfinite(plain):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = srcgrad.grad(fn, wrt=(0, 1), strict=True)(y, w)
        except srcgrad.CompileError as exc:
            assert "internal error" not in str(exc), exc
            try:
                got = srcgrad.grad(fn, wrt=(0, 1))(y, w)
            except srcgrad.CompileError as refused:       # the eager engine cannot either
                assert "internal error" not in str(refused), refused
                return
    expected = [numerical_grad(lambda v: float(fn(v, w)), [y.copy()], 0),
                numerical_grad(lambda v: float(fn(y, v)), [w.copy()], 0)]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-7)


scaled_vjp = 3.0         # the names srcgrad gives the vjp and jvp of the helper below
scaled_jvp = 3.0


def scaled(x):
    return x * scaled_vjp + x * scaled_jvp


def _reads_globals_named_like_its_derivatives(x):
    return np.sum(np.sin(scaled(x)))


def test_a_global_named_like_a_helpers_derivative_keeps_its_value():
    """A helper reading globals named ``scaled_vjp`` and ``scaled_jvp``: the generated
    functions take other names (they were refused as two values under one name)."""
    f, x, t = _reads_globals_named_like_its_derivatives, np.array([0.3, 0.5]), np.ones(2)
    want = 6.0 * np.cos(6.0 * x)
    np.testing.assert_allclose(srcgrad.grad(f, strict=True)(x), want, rtol=1e-12)
    np.testing.assert_allclose(srcgrad.jvp(f, (x,), (t,), strict=True)[1], want.sum(),
                               rtol=1e-12)
    np.testing.assert_allclose(srcgrad.hessian(f, strict=True)(x),
                               np.diag(-36.0 * np.sin(6.0 * x)), rtol=1e-12, atol=1e-12)



def test_the_run_time_guards_names_never_shadow():
    """A loop over an argument that is not differentiated is guarded at run time
    (``indexed_sequence``, ``NotCompiled``): a global ``NotCompiled`` is the user's own, and a
    global ``indexed_sequence`` is refused by name, never bound in place of the guard."""
    source = """
        def f(x, xs):
            s = x * NotCompiled
            for r in xs:
                s = s + np.sum(r) * x
            return np.sum(s) + len(GUARD)
        """
    fn = define(source, {"np": np, "NotCompiled": 3.0, "GUARD": "abc"})
    g = srcgrad.grad(fn, strict=True)
    assert "if not indexed_sequence(xs)" in g.source
    np.testing.assert_allclose(g(np.array([0.5, 1.0]), np.ones((3, 2))), [9.0, 9.0])
    clash = define(source.replace("GUARD", "indexed_sequence"),
                   {"np": np, "NotCompiled": 3.0, "indexed_sequence": "abc"})
    with pytest.raises(srcgrad.CompileError, match="indexed_sequence.*rename it"):
        srcgrad.grad(clash, strict=True)
