"""Statements real code puts in differentiated functions: ``raise`` and ``assert`` checks,
``try``/``except`` around NumPy calls, ``with np.errstate(...)``, ``print`` and logging, a name
first bound inside a loop, a loop over a generator.  Each compiles (strict) to compiled ==
eager == finite differences (== autograd where it runs), raises what the plain function raises
on the same path, or is refused with a CompileError naming file and line."""

from __future__ import annotations

import contextlib
import logging
import warnings

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from compiled_helpers import check_three_ways, define

import srcgrad


def _raised(fn, *args):
    """The type and message of what ``fn(*args)`` raises."""
    with pytest.raises(Exception) as info:
        fn(*args)
    return type(info.value), str(info.value)


X3 = np.array([0.3, 0.6, 0.9])


def _refused(source, line, words, namespace=None, args=(X3,)):
    """Strict mode refuses ``source`` (when it compiles, or at the first call), naming the
    line (1-based in the source)."""
    fn = define(source, {"np": np, **(namespace or {})})
    with pytest.raises(srcgrad.CompileError, match=words) as info:
        srcgrad.grad(fn, strict=True)(*args)
    assert info.value.lineno == fn.__code__.co_firstlineno + line - 2


# ------------------------------------------------------------------------ raise, assert
CHECKS = """
def f(x, labels, scale=1.0):
    if x.ndim != 2:
        raise ValueError(f"expected 2-D input, got shape {x.shape}")
    if len(labels) != x.shape[0]:
        raise ValueError("labels and rows disagree")
    if not isinstance(scale, float) or scale <= 0:
        raise TypeError("scale must be a positive float")
    assert np.all(np.isfinite(x)), "non-finite input"
    return np.sum(np.tanh(x) * scale) + np.sum(x[np.arange(len(labels)), labels])
"""


def test_raise_and_assert_compile_and_raise_as_python_does():
    f = define(CHECKS, {"np": np})
    x, labels = np.random.default_rng(0).uniform(0.2, 1.4, (3, 2)), [0, 1, 1]
    compiled = check_three_ways(f, [x, labels])
    oracle = autograd.grad(lambda x: anp.sum(anp.tanh(x)) + anp.sum(
        x[np.arange(3), labels]))(x)
    np.testing.assert_allclose(compiled(x, labels)[0], oracle, rtol=1e-10)
    bad = [(x[0], labels), (x, labels[:2]), (x, labels, 2), (x * np.nan, labels)]
    for args in bad:
        assert _raised(compiled, *args) == _raised(f, *args)
    assert _raised(compiled, x, labels, 2)[0] is TypeError
    assert _raised(compiled, x * np.nan, labels) == (AssertionError, "non-finite input")


def test_a_raise_in_a_loop_body_and_in_a_helper_runs_on_the_path_taken():
    f = define("""
        def step(u, dt):
            if dt > 1.0 / (np.max(np.abs(u)) + 1e-12):
                raise ValueError("CFL condition violated")
            return u - dt * u ** 2
        def f(u, dt, n):
            for _ in range(n):
                u = step(u, dt)
            return np.sum(u)
        """, {"np": np}, name="f")
    u = np.array([0.3, 0.5, 0.7])
    compiled = check_three_ways(f, [u, 0.1, 4])
    assert _raised(compiled, u * 100.0, 0.1, 4) == (ValueError, "CFL condition violated")


@pytest.mark.parametrize("source, line, words", [
    ("""
    def f(x):
        if x.ndim != 1:
            raise Problem("no")
        return np.sum(x)
    """, 4, "builtin exception class"),
    ("""
    def f(x):
        if x.ndim != 1:
            raise
        return np.sum(x)
    """, 4, "bare `raise`"),
], ids=["custom class", "bare raise"])
def test_raises_not_compiled_are_refused_naming_the_line(source, line, words):
    class Problem(Exception):
        pass
    _refused(source, line, words, {"Problem": Problem})


# ------------------------------------------------------------------------- try / except
TRY = """
def f(a, shift):
    K = a @ a.T - shift * np.eye(a.shape[0])
    try:
        L = np.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        L = np.linalg.cholesky(K + 10.0 * np.eye(a.shape[0]))
    return np.sum(np.log(np.diag(L)))
"""


def _oracle_try(a, shift):
    K = a @ a.T - shift * anp.eye(a.shape[0])
    try:
        L = anp.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        L = anp.linalg.cholesky(K + 10.0 * anp.eye(a.shape[0]))
    return anp.sum(anp.log(anp.diag(L)))


@pytest.mark.parametrize("shift", [-1.0, 3.0], ids=["body", "handler"])
def test_try_except_differentiates_the_path_python_takes(shift):
    f = define(TRY, {"np": np})
    a = np.random.default_rng(1).uniform(-1.0, 1.0, (3, 3))
    K = a @ a.T - shift * np.eye(3)
    assert (np.linalg.eigvalsh(K).min() > 0) == (shift < 0)     # each path is taken once
    compiled = check_three_ways(f, [a, shift])
    np.testing.assert_allclose(compiled(a, shift)[0], autograd.grad(_oracle_try)(a, shift),
                               rtol=1e-9)


def test_a_try_returning_in_a_helper_and_a_handler_that_raises():
    f = define("""
        def safe_cholesky(K):
            try:
                return np.linalg.cholesky(K)
            except np.linalg.LinAlgError:
                raise ValueError("K is not positive definite")
        def f(a, shift):
            return np.sum(safe_cholesky(a @ a.T + shift * np.eye(3)))
        """, {"np": np}, name="f")
    a = np.random.default_rng(2).uniform(-1.0, 1.0, (3, 3))
    compiled = check_three_ways(f, [a, 1.0])
    assert _raised(compiled, a, -5.0) == (ValueError, "K is not positive definite")


def test_a_handler_that_re_raises_raises_the_same_error():
    f = define("""
        def f(a, shift):
            try:
                L = np.linalg.cholesky(a @ a.T + shift * np.eye(3))
            except (np.linalg.LinAlgError, ValueError):
                raise
            return np.sum(L)
        """, {"np": np})
    a = np.random.default_rng(3).uniform(-1.0, 1.0, (3, 3))
    compiled = check_three_ways(f, [a, 1.0])
    assert _raised(compiled, a, -5.0) == _raised(f, a, -5.0)
    assert _raised(compiled, a, -5.0)[0] is np.linalg.LinAlgError


@pytest.mark.parametrize("source, line, words", [
    ("""
    def f(x):
        try:
            y = np.exp(x)
        finally:
            return np.sum(x)
        return np.sum(y)
    """, 6, "finally block that returns"),
    ("""
    def f(x):
        try:
            y = np.exp(x)
        except ValueError:
            if x.ndim > 1:
                raise
            y = x
        finally:
            print("done")
        return np.sum(y)
    """, 7, "finally block would run first"),
    ("""
    def f(x):
        try:
            y = np.exp(x)
        except Exception:
            y = x
        return np.sum(y)
    """, 5, "builtin exception class"),
    ("""
    def f(x):
        try:
            y = np.exp(x)
        except ValueError as e:
            y = x * len(str(e))
        return np.sum(y)
    """, 6, "as e"),
    ("""
    def f(x):
        try:
            if x.ndim > 1:
                x = x.ravel()
            z = np.log(x)
        except ValueError:
            z = x
        return np.sum(z)
    """, 4, "try body of assignments"),
    ("""
    def f(x):
        try:
            y = x + np.random.normal(size=x.shape)
        except ValueError:
            y = x
        return np.sum(y)
    """, 4, "NumPy and SciPy functions only"),
    ("""
    def f(x):
        try:
            y = np.exp(x)
        except:
            y = x
        return np.sum(y)
    """, 5, "named exception classes"),
], ids=["finally returns", "raise before finally", "Exception", "as", "an if",
        "random draw", "bare except"])
def test_try_statements_not_compiled_are_refused_naming_the_line(source, line, words):
    _refused(source, line, words)


# ---------------------------------------------------------------------------------- with
def test_errstate_covers_the_block_forward_and_adjoint():
    f = define("""
        def f(x):
            with np.errstate(divide="ignore", invalid="ignore"):
                y = np.where(x > 0.5, x * np.log(x), 0.0)
            return np.sum(y) + np.sum(x ** 2)
        """, {"np": np})
    x = np.array([0.7, 0.9, 1.3])
    check_three_ways(f, [x])
    compiled = srcgrad.grad(f, strict=True)
    zero = np.array([0.0, 0.9, 1.3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # the plain function does not warn: nor do we
        f(zero)
        got = compiled(zero)
    assert "with np.errstate(divide='ignore', invalid='ignore'):" in compiled.source
    assert np.isnan(got[0]) and np.all(np.isfinite(got[1:]))
    np.testing.assert_allclose(got[1:], 2 * zero[1:] + np.log(zero[1:]) + 1.0, rtol=1e-12)


@pytest.mark.parametrize("source, line, words", [
    ("""
    def f(x):
        with np.errstate(all="raise"):
            y = np.log(x)
        return np.sum(y)
    """, 3, "'ignore'"),
    ("""
    def f(x):
        with np.errstate(all="ignore") as state:
            y = np.log(x)
        return np.sum(y)
    """, 3, "no `as`"),
    ("""
    def f(x):
        with contextlib.suppress(ValueError):
            y = np.log(x)
        return np.sum(y)
    """, 3, "not compiled as a context manager"),
    ("""
    def f(x):
        with warnings.catch_warnings(record=True):
            y = np.log(x)
        return np.sum(y)
    """, 3, "not compiled as a context manager"),
], ids=["raise mode", "as", "other manager", "recording warnings"])
def test_with_statements_not_compiled_are_refused_naming_the_line(source, line, words):
    _refused(source, line, words, {"warnings": warnings, "contextlib": contextlib})


def test_catch_warnings_and_its_filters_cover_the_block_forward_and_adjoint():
    f = define("""
        def f(x):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", category=RuntimeWarning)
                y = np.where(x > 0.0, x * np.log(x), 0.0)
            return np.sum(y) + np.sum(np.log(x + 1.0))
        """, {"np": np, "warnings": warnings})
    check_three_ways(f, [np.array([0.2, 0.5, 1.0])])
    compiled = srcgrad.grad(f, strict=True)
    zero = np.array([0.0, 0.5, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(zero)
        got = compiled(zero)
    for fn in (f, compiled):                     # outside the block, a warning still warns
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            fn(zero - 1.0)
        assert any("divide by zero encountered in log" in str(w.message) for w in seen)
    np.testing.assert_allclose(got[1:], np.log(zero[1:]) + 1.0 + 1.0 / (zero[1:] + 1.0))


# ------------------------------------------------------------------------- print, logging
class _Kept(logging.Handler):
    """Keeps the messages of the records it is handed."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_prints_and_logging_run_once_in_order_with_the_primal_values(capsys):
    logger = logging.getLogger("srcgrad.test_statements")
    f = define("""
        def f(w, X, verbose=True):
            mse = np.mean((X @ w) ** 2)
            if verbose:
                print(f"mse={mse:.4f}", "%.3f" % np.linalg.norm(w))
                logging.info("loss %s", mse)
                logger.warning("weights: %s", w)
            return mse
        """, {"np": np, "logging": logging, "logger": logger})
    rng = np.random.default_rng(4)
    w, X = rng.normal(size=3), rng.normal(size=(5, 3))
    root, kept = logging.getLogger(), _Kept()
    level, kind = root.level, type(root)
    root.__class__ = logging.RootLogger     # importing numpy.distutils swaps its class
    root.addHandler(kept)
    root.setLevel(logging.INFO)
    try:
        f(w, X)
        plain = (capsys.readouterr().out, list(kept.messages))
        kept.messages.clear()
        compiled = srcgrad.grad(f, strict=True)
        got = compiled(w, X)
        assert (capsys.readouterr().out, kept.messages) == plain
    finally:
        root.removeHandler(kept)
        root.setLevel(level)
        root.__class__ = kind
    assert plain[0].count("mse=") == 1
    assert plain[1] == [f"loss {np.mean((X @ w) ** 2)}", f"weights: {w}"]
    np.testing.assert_allclose(got, autograd.grad(lambda w: anp.mean((X @ w) ** 2))(w),
                               rtol=1e-10)


# ------------------------------------------------------------- names bound in a loop
DEQ = """
def f(W, x, n):
    z = np.zeros_like(x)
    for _ in range(n):
        z_new = np.tanh(W @ z + x)
        if np.max(np.abs(z_new - z)) < 1e-12:
            break
        z = z_new
    return np.sum(z_new ** 2)
"""


def test_a_name_first_bound_in_a_loop_is_read_after_it():
    f = define(DEQ, {"np": np})
    rng = np.random.default_rng(5)
    W, x = 0.3 * rng.normal(size=(3, 3)), rng.normal(size=3)
    compiled = check_three_ways(f, [W, x, 6])

    def oracle(W):
        z = anp.zeros_like(x)
        for _ in range(6):
            z_new = anp.tanh(anp.dot(W, z) + x)
            z = z_new
        return anp.sum(z_new ** 2)
    np.testing.assert_allclose(compiled(W, x, 6)[0], autograd.grad(oracle)(W), rtol=1e-9)
    assert _raised(compiled, W, x, 0) == _raised(f, W, x, 0)
    assert _raised(compiled, W, x, 0)[0] is UnboundLocalError


def test_a_name_first_bound_in_a_while_loop_and_in_a_loop_over_rows():
    f = define("""
        def f(x, m):
            k = 0
            while k < 3:
                y = np.sin(x) * (k + 1.0)
                k += 1
            total = np.sum(y)
            for row in m:
                last = row * y
            return np.sum(last) + total
        """, {"np": np})
    rng = np.random.default_rng(6)
    x, m = rng.uniform(0.2, 1.4, 3), rng.uniform(0.2, 1.4, (4, 3))
    compiled = check_three_ways(f, [x, m])
    assert _raised(compiled, x, m[:0]) == _raised(f, x, m[:0])


@pytest.mark.parametrize("source, line", [
    ("""
    def f(x, n):
        for i in range(n):
            if i > 0:
                x = x + z
            z = np.sin(x)
        return np.sum(z)
    """, 3),
    ("""
    def f(x, n):
        for i in range(n):
            z = np.sin(x) * i
        if n > 2:
            return np.sum(z)
        return np.sum(x)
    """, 3),
    ("""
    def f(x, n):
        for i in range(n):
            if i > 1:
                z = np.sin(x) * i
        return np.sum(z)
    """, 3),
], ids=["read before bound", "read on one path", "bound on one path"])
def test_names_bound_in_a_loop_otherwise_are_refused(source, line):
    _refused(source, line, "first assigned inside the loop", args=(np.ones(3), 3))


# ------------------------------------------------------------------------------ generators
GENERATOR = """
layer_sizes = [3, 4, 2]

def unpack_layers(weights):
    for m, n in [(3, 4), (4, 2)]:
        yield weights[:m * n].reshape((m, n)), weights[m * n:m * n + n]
        weights = weights[(m + 1) * n:]

def f(weights, inputs):
    for W, b in unpack_layers(weights):
        outputs = inputs @ W + b
        inputs = np.tanh(outputs)
    return np.sum(outputs ** 2)
"""


def test_a_loop_over_a_generator_is_expanded_in_place():
    f = define(GENERATOR, {"np": np}, name="f")
    rng = np.random.default_rng(7)
    weights, inputs = 0.5 * rng.normal(size=26), rng.normal(size=(5, 3))
    compiled = check_three_ways(f, [weights, inputs])
    oracle = define(GENERATOR, {"np": anp}, name="f")
    np.testing.assert_allclose(compiled(weights, inputs)[0],
                               autograd.grad(oracle)(weights, inputs), rtol=1e-9)


@pytest.mark.parametrize("source, words", [
    ("""
    def gen(x):
        yield from [x, x]
    def f(x):
        t = 0.0
        for v in gen(x):
            t = t + np.sum(v)
        return t
    """, "YieldFrom"),
    ("""
    def gen(x):
        yield x
        yield x * 2.0
    def f(x):
        t = 0.0
        for v in gen(x):
            t = t + np.sum(v)
            if t > 1.0:
                break
        return t
    """, "break"),
    ("""
    def gen(x):
        y = yield x
        yield y
    def f(x):
        t = 0.0
        for v in gen(x):
            t = t + np.sum(v)
        return t
    """, "value of a yield"),
], ids=["yield from", "break", "yield as a value"])
def test_generators_not_expanded_are_refused_naming_the_loop(source, words):
    fn = define(source, {"np": np}, name="f")
    with pytest.raises(srcgrad.CompileError, match=words) as info:
        srcgrad.grad(fn, strict=True)
    assert "for v in gen(x)" in str(info.value)


def test_a_branch_that_raises_needs_no_value_for_what_the_other_assigns():
    f = define("""
        def f(x, mode):
            if mode == "square":
                y = x ** 2
            elif mode == "sine":
                y = np.sin(x)
            else:
                raise ValueError(f"unknown mode {mode!r}")
            return np.sum(y)
        """, {"np": np})
    x = np.array([0.3, 0.6, 0.9])
    for mode in ("square", "sine"):
        check_three_ways(f, [x, mode])
    compiled = srcgrad.grad(f, strict=True)
    assert _raised(compiled, x, "cube") == (ValueError, "unknown mode 'cube'")


def test_a_re_raise_nested_in_a_handler_and_an_else_block():
    f = define("""
        def f(a, shift):
            try:
                L = np.linalg.cholesky(a @ a.T + shift * np.eye(3))
            except np.linalg.LinAlgError:
                if shift < -100.0:
                    raise
                L = np.eye(3) * shift
            else:
                L = L * 2.0
            return np.sum(L)
        """, {"np": np})
    a = np.random.default_rng(8).uniform(-1.0, 1.0, (3, 3))
    for shift in (1.0, -5.0):
        check_three_ways(f, [a, shift])
    compiled = srcgrad.grad(f, strict=True)
    assert _raised(compiled, a, -500.0) == _raised(f, a, -500.0)


def test_a_try_body_assigning_before_what_may_raise_is_refused():
    _refused("""
    def f(x):
        scale = 1.0
        try:
            scale = 2.0
            y = np.linalg.cholesky(np.outer(x, x) + np.eye(3))
        except np.linalg.LinAlgError:
            y = np.eye(3)
        return np.sum(y) * scale
    """, 7, "'scale' is assigned in the try body before the statement that raised")


def test_try_and_with_blocks_have_exact_second_derivatives():
    f = define("""
        def f(a):
            K = np.outer(a, a) + 0.5 * np.eye(3)
            try:
                L = np.linalg.cholesky(K)
            except np.linalg.LinAlgError:
                L = np.eye(3)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with np.errstate(divide="ignore"):
                    y = np.log(np.diag(L))
            return np.sum(y * y)
        """, {"np": np, "warnings": warnings})

    def oracle(a):
        y = anp.log(anp.diag(anp.linalg.cholesky(anp.outer(a, a) + 0.5 * anp.eye(3))))
        return anp.sum(y * y)
    a = np.array([0.3, -0.2, 0.5])
    np.testing.assert_allclose(srcgrad.hessian(f, strict=True)(a), autograd.hessian(oracle)(a),
                               rtol=1e-9, atol=1e-12)


def test_a_try_body_that_returns_skips_the_else_block(capsys):
    f = define("""
        def f(a, shift):
            try:
                return np.sum(np.linalg.cholesky(np.outer(a, a) + shift * np.eye(3)))
            except np.linalg.LinAlgError:
                print("handler")
            else:
                print("else")
            return np.sum(a * a)
        """, {"np": np})
    a = np.array([0.3, -0.2, 0.5])
    for shift, printed in ((1.0, ""), (-1.0, "handler\n")):
        compiled = check_three_ways(f, [a, shift])
        capsys.readouterr()
        compiled(a, shift)
        assert capsys.readouterr().out == printed


def test_the_loop_variable_read_after_the_loop_and_the_first_unbound_name_raises():
    f = define("""
        def f(x, n):
            for i in range(n):
                y = x * (i + 1.0)
            return np.sum(y) * i
        """, {"np": np})
    compiled = check_three_ways(f, [np.array([0.3, 0.6]), 3])
    assert _raised(compiled, np.ones(2), 0) == _raised(f, np.ones(2), 0)
    assert "'y'" in _raised(f, np.ones(2), 0)[1]


def test_default_mode_compiles_them_all_and_raises_as_python_does():
    f = define("""
        def f(x, n):
            if x.ndim != 1:
                raise ValueError(f"bad shape {x.shape}")
            z = x
            for _ in range(n):
                z_new = np.tanh(z)
                z = z_new
            try:
                L = np.linalg.cholesky(np.outer(z_new, z_new) + 0.5 * np.eye(2))
            except np.linalg.LinAlgError:
                raise RuntimeError("not positive definite")
            return np.sum(L)
        """, {"np": np})
    with warnings.catch_warnings():
        warnings.simplefilter("error", srcgrad.FallbackWarning)
        g = srcgrad.grad(f)
        x = np.array([0.4, -0.7])
        np.testing.assert_allclose(g(x, 2), check_three_ways(f, [x, 2])(x, 2)[0])
        for args in ((np.ones((2, 2)), 2), (x, 0)):
            assert _raised(g, *args) == _raised(f, *args)
    assert g.fallback_reason is None


def test_finally_runs_on_every_path_once(capsys):
    namespace = {"np": np}
    f = define("""
        def f(a, shift):
            try:
                L = np.linalg.cholesky(np.outer(a, a) + shift * np.eye(3))
            except np.linalg.LinAlgError:
                L = np.eye(3) * shift
            else:
                print("else")
            finally:
                print("finally")
            return np.sum(L)

        def g(a, shift):
            try:
                return np.sum(np.linalg.cholesky(np.outer(a, a) + shift * np.eye(3)))
            finally:
                print("cleanup")
        """, namespace)
    g = namespace["g"]
    a = np.array([0.3, -0.2, 0.5])
    for fn, shift, printed in ((f, 1.0, "else\nfinally\n"), (f, -1.0, "finally\n"),
                               (g, 1.0, "cleanup\n")):
        compiled = check_three_ways(fn, [a, shift])
        capsys.readouterr()
        fn(a, shift)
        assert capsys.readouterr().out == printed
        compiled(a, shift)
        assert capsys.readouterr().out == printed
    assert _raised(srcgrad.grad(g, strict=True), a, -1.0)[0] is np.linalg.LinAlgError


def test_a_list_first_built_in_a_loop_is_read_after_it():
    f = define("""
        def f(x, n):
            for i in range(n):
                parts = [x * i]
                parts.append(np.sin(x))
            return np.sum(np.stack(parts))
        """, {"np": np})
    compiled = check_three_ways(f, [np.array([0.3, 0.6]), 3])
    assert _raised(compiled, np.ones(2), 0) == _raised(f, np.ones(2), 0)
    _refused("""
    def f(x, n):
        for i in range(n):
            parts = list([x, x * i])
        return np.sum(np.stack(parts))
    """, 3, "a list made there", args=(np.ones(2), 3))
