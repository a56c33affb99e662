"""``try``/``except`` in compiled functions: the body's statement runs once per call (a
NumPy function that raises is not called again to find the handler), the path Python takes is
differentiated (compiled strict == default mode == eager == finite differences == autograd),
``except E as e`` binds the exception the body raised (prints, logging, ``raise ... from e``,
``raise e``), and uses of ``e`` the compiler does not model are refused naming the line."""

from __future__ import annotations

import logging
import warnings

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from compiled_helpers import check_three_ways, define

import srcgrad

A = np.random.default_rng(11).uniform(-1.0, 1.0, (3, 3))


def _raised(fn, *args):
    """The type, message and cause (type and message) of what ``fn(*args)`` raises."""
    with pytest.raises(Exception) as info:
        fn(*args)
    cause = info.value.__cause__
    return type(info.value), str(info.value), type(cause), str(cause)


def _same_in_default_mode(f, args, compiled):
    """Default mode compiles ``f`` too (no fallback) and agrees with strict mode."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", srcgrad.FallbackWarning)
        default = srcgrad.grad(f, wrt=(0,))
        np.testing.assert_allclose(default(*args)[0], compiled(*args)[0], rtol=1e-12)
    assert default.fallback_reason is None


class _Counted:
    """``np.linalg.cholesky`` counting its calls (set in after compiling: the generated code
    looks it up on ``np.linalg`` when it runs)."""

    def __init__(self):
        self.calls, self.original = 0, np.linalg.cholesky

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.original(*args, **kwargs)


CHOLESKY = """
def f(a, shift):
    K = a @ a.T + shift * np.eye(3)
    try:
        L = np.linalg.cholesky(K)
    except np.linalg.LinAlgError as e:
        print(f"jitter added: {e}")
        L = np.linalg.cholesky(K + 10.0 * np.eye(3))
    return np.sum(np.log(np.diag(L)))
"""


def _oracle(a, shift):
    K = anp.dot(a, a.T) + shift * anp.eye(3)
    try:
        L = anp.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        L = anp.linalg.cholesky(K + 10.0 * anp.eye(3))
    return anp.sum(anp.log(anp.diag(L)))


@pytest.mark.parametrize("shift, calls", [(1.0, 1), (-3.0, 2)], ids=["body", "handler"])
def test_the_try_body_runs_once_and_the_handler_sees_the_exception(shift, calls, capsys,
                                                                    monkeypatch):
    f = define(CHOLESKY, {"np": np})
    assert (np.linalg.eigvalsh(A @ A.T + shift * np.eye(3)).min() > 0) == (shift > 0)
    compiled = check_three_ways(f, [A, shift])
    np.testing.assert_allclose(compiled(A, shift)[0], autograd.grad(_oracle)(A, shift),
                               rtol=1e-9)
    _same_in_default_mode(f, [A, shift], compiled)
    forward = srcgrad.jvp(f, strict=True)
    capsys.readouterr()
    f(A, shift)
    printed = capsys.readouterr().out
    assert printed.count("jitter added: Matrix is not positive definite") == (calls - 1)
    counted = _Counted()
    monkeypatch.setattr(np.linalg, "cholesky", counted)
    compiled(A, shift)
    assert counted.calls == calls                       # as many as the plain function's
    forward((A, shift), (np.ones_like(A), 0.0))
    assert counted.calls == 2 * calls
    assert capsys.readouterr().out == 2 * printed


def test_the_generated_code_runs_the_body_in_a_python_try():
    f = define(CHOLESKY, {"np": np})
    source = srcgrad.grad(f, strict=True).source
    code = [line for line in source.splitlines() if not line.strip().startswith("#")]
    assert sum("np.linalg.cholesky(K)" in line for line in code) == 1
    assert "except (np.linalg.LinAlgError,) as error:" in source


def test_a_second_derivative_through_the_caught_exception():
    f = define(CHOLESKY, {"np": np})
    for shift in (1.0, -3.0):
        np.testing.assert_allclose(srcgrad.hessian(f, strict=True)(A, shift),
                                   autograd.hessian(_oracle)(A, shift), rtol=1e-8, atol=1e-10)


def test_raise_from_the_caught_exception_and_raise_it_again(caplog):
    namespace = {"np": np, "logging": logging}
    f = define("""
        log = logging.getLogger("srcgrad.test.try")
        def f(a, shift):
            try:
                L = np.linalg.cholesky(a @ a.T + shift * np.eye(3))
            except np.linalg.LinAlgError as err:
                log.warning("cholesky failed: %s", err)
                if shift < -100.0:
                    raise err
                raise ValueError(f"covariance not positive definite ({err})") from err
            return np.sum(L)
        """, namespace)
    compiled = check_three_ways(f, [A, 1.0])
    _same_in_default_mode(f, [A, 1.0], compiled)
    for shift in (-5.0, -500.0):
        with caplog.at_level(logging.WARNING, "srcgrad.test.try"):
            caplog.clear()
            expected = _raised(f, A, shift)
            assert len(caplog.records) == 1
            caplog.clear()
            assert _raised(compiled, A, shift) == expected
            assert [r.getMessage() for r in caplog.records] == [
                "cholesky failed: Matrix is not positive definite"]
    assert _raised(compiled, A, -5.0)[:3] == (
        ValueError, "covariance not positive definite (Matrix is not positive definite)",
        np.linalg.LinAlgError)
    assert _raised(compiled, A, -500.0)[0] is np.linalg.LinAlgError


def test_a_bare_raise_in_a_nested_handler_raises_the_inner_exception():
    f = define("""
        def f(a, shift):
            try:
                L = np.linalg.cholesky(a @ a.T + shift * np.eye(3))
            except np.linalg.LinAlgError:
                try:
                    L = np.linalg.inv(a @ a.T * (shift + 5.0))
                except np.linalg.LinAlgError:
                    raise
            return np.sum(L)
        """, {"np": np})
    compiled = check_three_ways(f, [A, 1.0])
    check_three_ways(f, [A, -3.0])
    assert _raised(compiled, A, -5.0) == _raised(f, A, -5.0)
    assert _raised(compiled, A, -5.0)[1] == "Singular matrix"


def test_a_tuple_assigned_in_the_body_and_an_old_value_kept_by_the_handler():
    f = define("""
        def f(a, shift):
            w, v = np.zeros(3), np.eye(3)
            try:
                w, v = np.linalg.eigh(np.linalg.cholesky(a @ a.T + shift * np.eye(3)))
            except np.linalg.LinAlgError:
                pass
            return np.sum(w * w) + np.sum(v[0] ** 2 * a[0])
        """, {"np": np})
    def oracle(a, shift):
        w, v = anp.zeros(3), anp.eye(3)
        try:
            w, v = anp.linalg.eigh(anp.linalg.cholesky(anp.dot(a, a.T) + shift * anp.eye(3)))
        except np.linalg.LinAlgError:
            pass
        return anp.sum(w * w) + anp.sum(v[0] ** 2 * a[0])
    for shift in (1.0, -3.0):
        compiled = check_three_ways(f, [A, shift])
        _same_in_default_mode(f, [A, shift], compiled)
        np.testing.assert_allclose(compiled(A, shift)[0], autograd.grad(oracle)(A, shift),
                                   rtol=1e-8, atol=1e-12)


SOLVE = """
def f(a, shift, y):
    K = a @ a.T + shift * np.eye(3)
    try:
        L = np.linalg.cholesky(K)
        alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
        fit = alpha @ y
    except np.linalg.LinAlgError:
        fit = np.sum(y * y) / np.trace(K)
    return fit + np.sum(a * a)
"""


def _oracle_solve(a, shift, y):
    K = anp.dot(a, a.T) + shift * anp.eye(3)
    try:
        L = anp.linalg.cholesky(K)
        fit = anp.dot(anp.linalg.solve(L.T, anp.linalg.solve(L, y)), y)
    except np.linalg.LinAlgError:
        fit = anp.sum(y * y) / anp.trace(K)
    return fit + anp.sum(a * a)


@pytest.mark.parametrize("shift, calls", [(1.0, 1), (-3.0, 1)], ids=["body", "handler"])
def test_a_try_body_of_several_statements_runs_once(shift, calls, monkeypatch):
    f = define(SOLVE, {"np": np})
    y = np.array([0.4, -0.3, 0.8])
    compiled = check_three_ways(f, [A, shift, y])
    np.testing.assert_allclose(compiled(A, shift, y)[0],
                               autograd.grad(_oracle_solve)(A, shift, y), rtol=1e-9)
    _same_in_default_mode(f, [A, shift, y], compiled)
    counted = _Counted()
    monkeypatch.setattr(np.linalg, "cholesky", counted)
    compiled(A, shift, y)
    assert counted.calls == calls


@pytest.mark.parametrize("source, line", [
    ("""
    def f(x):
        try:
            y = np.exp(x)
            z = np.log(y - 2.0)
        except FloatingPointError:
            z = y
        return np.sum(z)
    """, 7),
    ("""
    def f(x):
        y = x
        try:
            y = np.exp(x)
            z = np.log(y - 2.0)
        except FloatingPointError:
            z = x
        return np.sum(z * y)
    """, 7),
], ids=["read in the handler", "read after the try"])
def test_a_name_the_body_assigned_before_it_raised_is_refused_where_read(source, line):
    _refused(source, line, "'y' is assigned in the try body before the statement that raised")


def test_prints_in_the_try_body_run_up_to_the_statement_that_raised(capsys):
    f = define("""
        def f(a, shift):
            try:
                print("factorising")
                L = np.linalg.cholesky(a @ a.T + shift * np.eye(3))
                print("factorised")
            except np.linalg.LinAlgError:
                L = a
            return np.sum(L * L)
        """, {"np": np})
    for shift in (1.0, -3.0):
        compiled = check_three_ways(f, [A, shift])
        capsys.readouterr()
        f(A, shift)
        printed = capsys.readouterr().out
        assert printed == ("factorising\nfactorised\n" if shift > 0 else "factorising\n")
        compiled(A, shift)
        assert capsys.readouterr().out == printed


def test_a_handler_that_raises_needs_no_value_of_the_body():
    f = define("""
        def f(x):
            try:
                y = np.exp(x)
                z = np.linalg.cholesky(np.outer(y, y) + np.eye(3))
            except np.linalg.LinAlgError as err:
                raise ValueError("no factor") from err
            return np.sum(z) + np.sum(y)
        """, {"np": np})
    compiled = check_three_ways(f, [np.array([0.3, -0.2, 0.5])])
    _same_in_default_mode(f, [np.array([0.3, -0.2, 0.5])], compiled)


def test_a_refusal_of_the_compiled_code_is_not_taken_for_the_users_exception():
    f = define("""
        def f(x):
            try:
                g = np.gradient(x)
            except TypeError:
                g = x * 2.0
            return np.sum(g * x)
        """, {"np": np})
    x = np.array([0.3, 0.9, 0.4, 1.2])
    compiled = check_three_ways(f, [x])
    _same_in_default_mode(f, [x], compiled)
    with pytest.raises(srcgrad.CompileError, match="does not compile f for these arguments"):
        compiled(np.outer(x, x))              # np.gradient of a 2-D array: refused, not caught


def _refused(source, line, words):
    fn = define(source, {"np": np})
    with pytest.raises(srcgrad.CompileError, match=words) as info:
        srcgrad.grad(fn, strict=True)(np.array([0.3, 0.6, 0.9]))
    assert info.value.lineno == fn.__code__.co_firstlineno + line - 2


@pytest.mark.parametrize("source, line, words", [
    ("""
    def f(x):
        try:
            y = np.exp(x)
        except FloatingPointError as e:
            y = x * len(e.args)
        return np.sum(y)
    """, 6, "as e"),
    ("""
    def f(x):
        try:
            y = np.exp(x)
        except FloatingPointError as e:
            e = None
            y = x
        return np.sum(y)
    """, 6, "as e"),
    ("""
    def f(x):
        try:
            y = np.exp(x)
        except FloatingPointError as e:
            if e is not None:
                y = x
        return np.sum(y)
    """, 6, "as e"),
    ("""
    def f(x):
        e = 1.0
        try:
            y = np.exp(x)
        except FloatingPointError as e:
            y = x
        return np.sum(y) * e
    """, 6, "deletes it"),
], ids=["computed with", "rebound", "tested", "read after"])
def test_uses_of_the_caught_exception_not_compiled_are_refused(source, line, words):
    _refused(source, line, words)
