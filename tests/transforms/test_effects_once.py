"""A function's prints and logging calls happen once per transform call, as when calling the
plain function once (and as autograd's ``grad``, ``jacobian`` and ``hessian`` do): not again
when the safety net runs a failed call on the eager engine and the plain function, nor once
per column of ``jacfwd`` or a Hessian.  The muting is per thread."""

from __future__ import annotations

import logging
import threading
import warnings

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from compiled_helpers import define

import srcgrad
from srcgrad.runtime.quiet import is_muted, muted

X = np.array([0.3, -0.4, 0.8])

CHECKED = """
log = logging.getLogger("srcgrad.test.effects")
def f(x):
    print("start", x.shape)
    log.warning("size %d", x.size)
    y = np.sum(x * x)
    if y > 100.0:
        raise ValueError("too big")
    print("end")
    return y
"""


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
def test_a_call_that_raises_prints_and_logs_once(strict, capsys, caplog):
    f = define(CHECKED, {"np": np, "logging": logging})
    grad = srcgrad.grad(f, strict=strict)
    with caplog.at_level(logging.WARNING, "srcgrad.test.effects"):
        np.testing.assert_allclose(grad(X), 2 * X)
        assert capsys.readouterr().out == "start (3,)\nend\n"
        assert len(caplog.records) == 1
        for fn in (f, grad):
            caplog.clear()
            with pytest.raises(ValueError, match="too big"):
                fn(X * 20.0)
            assert capsys.readouterr().out == "start (3,)\n"
            assert [r.getMessage() for r in caplog.records] == ["size 3"]
    assert grad.fallback_reason is None


LOOPED = """
def g(x):
    print("g")
    s = x
    for i in range(3):
        s = np.sin(s) * (i + 1.0)
    return s

def h(x):
    print("h")
    s = 0.0
    for i in range(3):
        s = s + np.sum(np.sin(x) * x) * (i + 1.0)
    return s

def s(x):
    print("s")
    return np.sum(np.sin(x))
"""


def _oracles():
    def g(x):
        s = x
        for i in range(3):
            s = anp.sin(s) * (i + 1.0)
        return s

    def h(x):
        return sum(anp.sum(anp.sin(x) * x) * (i + 1.0) for i in range(3))
    return autograd.jacobian(g), autograd.hessian(h)


def test_jacfwd_and_a_hessian_with_loops_print_once_per_call(capsys):
    namespace = {"np": np}
    g = define(LOOPED, namespace, name="g")
    h = namespace["h"]
    jacobian, hessian = _oracles()
    with warnings.catch_warnings():
        warnings.simplefilter("error", srcgrad.FallbackWarning)
        for strict in (True, False):
            capsys.readouterr()
            np.testing.assert_allclose(srcgrad.jacfwd(g, strict=strict)(X), jacobian(X),
                                       rtol=1e-12)
            assert capsys.readouterr().out == "g\n"
            np.testing.assert_allclose(srcgrad.hessian(h, strict=strict)(X), hessian(X),
                                       rtol=1e-10)
            assert capsys.readouterr().out == "h\n"
            np.testing.assert_allclose(srcgrad.jacrev(g, strict=strict)(X), jacobian(X),
                                       rtol=1e-12)
            assert capsys.readouterr().out == "g\n"
            straight = srcgrad.hessian(namespace["s"], strict=strict)
            np.testing.assert_allclose(straight(X), np.diag(-np.sin(X)), rtol=1e-12)
            assert capsys.readouterr().out == "s\n"


def test_a_hessian_of_a_tuple_argument_prints_once(capsys):
    f = define("""
        def f(xs):
            print("f")
            a, b = xs
            for _ in range(2):
                a = np.sin(a) * b
            return np.sum(a * b)
        """, {"np": np})
    xs = (X, X[::-1].copy())
    capsys.readouterr()
    got = srcgrad.hessian(f, strict=True)(xs)
    assert capsys.readouterr().out == "f\n"

    def oracle(a, b):
        for _ in range(2):
            a = anp.sin(a) * b
        return anp.sum(a * b)
    np.testing.assert_allclose(got[0][0], autograd.hessian(oracle, 0)(*xs), rtol=1e-10)


def test_a_function_that_falls_back_prints_once_per_transform_call(capsys):
    f = define("""
        def f(x):
            print("f")
            s = 0.0
            for i in range(3):
                s = s + np.sum(np.sin(x) * x) * (i + 1.0)
            try:
                y = np.sum(x)
            except ValueError as e:
                y = len(str(e))
            return s + y
        """, {"np": np})

    def oracle(x):
        return sum(anp.sum(anp.sin(x) * x) * (i + 1.0) for i in range(3)) + anp.sum(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        for transform, want in ((srcgrad.hessian, autograd.hessian(oracle)),
                                (srcgrad.jacfwd, autograd.grad(oracle)),
                                (srcgrad.jacrev, autograd.grad(oracle)),
                                (srcgrad.grad, autograd.grad(oracle))):
            t = transform(f)
            capsys.readouterr()
            np.testing.assert_allclose(t(X), want(X), rtol=1e-10)
            assert capsys.readouterr().out == "f\n"
            assert t.fallback_reason is not None


def test_muting_drops_only_the_muted_threads_prints_and_records(capsys, caplog):
    log = logging.getLogger("srcgrad.test.effects.threads")
    ready, done = threading.Event(), threading.Event()

    def worker():
        with muted():
            assert is_muted()
            print("muted")
            log.warning("muted")
            ready.set()
            done.wait(10)

    with caplog.at_level(logging.WARNING, "srcgrad.test.effects.threads"):
        thread = threading.Thread(target=worker)
        thread.start()
        assert ready.wait(10)
        assert not is_muted()
        print("shown")
        log.warning("shown")
        done.set()
        thread.join()
    assert capsys.readouterr().out == "shown\n"
    assert [r.getMessage() for r in caplog.records] == ["shown"]
    print("after")
    assert capsys.readouterr().out == "after\n"
