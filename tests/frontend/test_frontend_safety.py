"""The front end differentiates the code that runs, and nothing the user controls becomes code.

- names and file names with newlines and code never execute (they are escaped or refused);
- two lambdas on one line are told apart by their code;
- a global, closure variable or helper rebound after ``grad()`` is followed;
- a module edited on disk after import is refused, not differentiated.
"""

from __future__ import annotations

import importlib
import linecache
import sys
import textwrap
import types
import warnings

import numpy as np
import pytest
from conftest import numerical_grad

import srcgrad
from srcgrad.frontend.freshness import Snapshot, same_code

X = np.array([0.5, -1.5, 2.0])
PAYLOAD = "\nimport builtins\nbuiltins.SRCGRAD_PWNED = True\n"


def _fd(f, x=X):
    return numerical_grad(lambda v: f(v), [x.copy()], 0)


def _never_ran():
    import builtins
    assert not getattr(builtins, "SRCGRAD_PWNED", False)


def _from_file(source: str, filename: str, name: str = "f", namespace: dict | None = None):
    """``source`` compiled as if read from ``filename`` (registered with linecache)."""
    source = textwrap.dedent(source)
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    env = {"np": np} if namespace is None else namespace
    exec(compile(source, filename, "exec"), env)
    return env[name]


def _compiles_or_refuses(fn):
    """A strict transform either compiles to the right gradient or raises CompileError."""
    try:
        g = srcgrad.grad(fn, strict=True)
    except srcgrad.CompileError:
        _never_ran()
        return None
    _never_ran()
    np.testing.assert_allclose(g(X), _fd(fn), rtol=1e-6, atol=1e-8)
    _never_ran()
    return g


# -------------------------------------------------------------------------------- injection
@pytest.mark.parametrize("attr", ["__name__", "__qualname__"])
def test_a_function_name_with_code_never_runs(attr):
    fn = _from_file("def f(x):\n    return np.sum(x * x)\n", "<safety-name>")
    setattr(fn, attr, 'f"""' + PAYLOAD + '#\u2028x\r\x0cy')
    g = _compiles_or_refuses(fn)
    if g is not None:
        lines = g.source.splitlines()
        assert not any(line.lstrip().startswith(("builtins.", "import builtins"))
                       for line in lines)
        compile(g.source, "<check>", "exec")        # still one valid module


def test_a_file_name_with_code_never_runs():
    fn = _from_file("def f(x):\n    return np.sum(np.sin(x))\n", "evil.py" + PAYLOAD + '"""')
    g = _compiles_or_refuses(fn)
    assert g is not None
    for line in g.source.splitlines():
        assert not line.startswith("builtins.")


def test_a_code_name_with_code_never_runs():
    fn = _from_file("def f(x):\n    return np.sum(x ** 3)\n", "<safety-code>")
    fn.__code__ = fn.__code__.replace(co_name="f" + PAYLOAD)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _compiles_or_refuses(fn)


def test_a_source_line_with_a_line_separator_stays_a_comment():
    fn = _from_file("def f(x):\n    s = '\u2028builtins.X = 1'\n    return np.sum(x * x)\n",
                    "<safety-line>")
    g = _compiles_or_refuses(fn)
    assert g is not None
    assert all(not line.lstrip().startswith("builtins.") for line in g.source.splitlines())


def test_a_module_with_a_forged_name_is_not_imported_by_text():
    fake = types.ModuleType("os; import builtins; builtins.SRCGRAD_PWNED = True")
    fake.scale = 3.0
    fn = _from_file("def f(x):\n    return np.sum(x * helpers.scale)\n", "<safety-mod>",
                    namespace={"np": np, "helpers": fake})
    g = _compiles_or_refuses(fn)
    assert g is not None and "import os" not in g.source


def test_generated_identifiers_are_identifiers():
    from srcgrad.ir import fresh_name
    for base in ["a\nb", "x²", "class", "1st", "", "ﬁx", "a b", "é"]:
        name = fresh_name(base, set())
        assert name.isidentifier(), base


# ------------------------------------------------------------------- which code is parsed
PAIR = (lambda x: np.sum(x * 2.0), lambda x: np.sum(x ** 3))


@pytest.mark.parametrize("k", [0, 1])
def test_two_lambdas_on_one_line_are_told_apart(k):
    np.testing.assert_allclose(srcgrad.grad(PAIR[k], strict=True)(X), _fd(PAIR[k]), rtol=1e-6)


def test_same_code_compares_bytecode():
    import ast
    node = ast.parse("def g(x):\n    return x * 2\n").body[0]
    other = ast.parse("def g(x):\n    return x * 3\n").body[0]

    def g(x):
        return x * 2
    assert same_code(node, g.__code__, "<t>") is True
    assert same_code(other, g.__code__, "<t>") is False


def test_a_module_edited_on_disk_is_refused(tmp_path):
    path = tmp_path / "edited_module_b2.py"
    path.write_text("import numpy as np\n\ndef f(x):\n    return np.sum(x * 2.0)\n")
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("edited_module_b2")
        path.write_text("import numpy as np\n\ndef f(x):\n    return np.sum(x * 9.0)\n")
        linecache.checkcache(str(path))
        with pytest.raises(srcgrad.CompileError, match="differs from the running code"):
            srcgrad.grad(module.f, strict=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_allclose(srcgrad.grad(module.f)(X), np.full(3, 2.0))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("edited_module_b2", None)


# ---------------------------------------------------------------------------- stale values
def test_a_rebound_global_and_helper_are_followed():
    env = {"np": np, "SCALE": 2.0}
    _from_file("""
        def helper(x):
            return x * 3.0

        def f(x):
            return np.sum(SCALE * helper(x))
        """, "<safety-stale>", namespace=env)
    g = srcgrad.grad(env["f"], strict=True)
    np.testing.assert_allclose(g(X), np.full(3, 6.0))
    env["SCALE"] = 5.0
    np.testing.assert_allclose(g(X), np.full(3, 15.0))
    _from_file("def helper(x):\n    return x * x\n", "<safety-stale-2>", name="helper",
               namespace=env)
    np.testing.assert_allclose(g(X), 10.0 * X)


def test_a_rebound_closure_variable_is_followed():
    c = 2.0

    def h(x):
        return np.sum(c * x)
    g = srcgrad.grad(h, strict=True)
    np.testing.assert_allclose(g(X), np.full(3, 2.0))
    c = 7.0
    np.testing.assert_allclose(g(X), np.full(3, 7.0))


class _Config:
    pass


def test_a_rebound_callable_attribute_is_followed():
    """``cfg.act`` is bound when the code is built; rebinding it must rebuild (it once kept
    differentiating the old function: a silent wrong gradient)."""
    cfg = _Config()
    cfg.act, cfg.scale = np.sin, 2.0

    def f(x):
        return np.sum(cfg.act(x) * cfg.scale)
    g = srcgrad.grad(f, strict=True)
    np.testing.assert_allclose(g(X), 2.0 * np.cos(X))
    cfg.act, cfg.scale = np.cos, 3.0
    np.testing.assert_allclose(g(X), -3.0 * np.sin(X))
    np.testing.assert_allclose(g(X), numerical_grad(f, [X], 0), rtol=1e-6)


def test_a_rebound_attribute_of_a_bound_instance_is_followed():
    class Model:
        def __init__(self):
            self.act = np.tanh

        def loss(self, x):
            return np.sum(self.act(x))
    m = Model()
    snap = Snapshot(m.loss)
    assert snap.changed() is None                 # a bound method is new at each lookup
    m.act = np.sin
    assert "act" in snap.changed()


def test_snapshot_sees_rebinding_only():
    env = {"np": np, "W": np.ones(3)}
    f = _from_file("def f(x):\n    return np.sum(W * x)\n", "<safety-snap>", namespace=env)
    snap = Snapshot(f)
    env["W"][0] = 5.0                     # changed in place: the same object, still bound
    assert snap.changed() is None
    env["W"] = np.zeros(3)
    assert "W" in snap.changed()


def test_an_attribute_bound_through_a_local_alias_is_followed():
    """``c = cfg; c.act(x)``: the compiler binds ``cfg.act`` when it builds, so rebinding it
    rebuilds (the bytecode alone does not show whose attribute ``c.act`` is)."""
    cfg = _Config()
    cfg.act = np.tanh

    def f(x):
        c = cfg
        return np.sum(c.act(x))

    class Model:
        def loss(self, x):
            return np.sum(np.tanh(x))
    model = Model()

    def h(x):
        m = model
        return m.loss(x)
    g, gh = srcgrad.grad(f, strict=True), srcgrad.grad(h, strict=True)
    np.testing.assert_allclose(g(X), 1 - np.tanh(X) ** 2)
    np.testing.assert_allclose(gh(X), 1 - np.tanh(X) ** 2)
    def other_loss(self, x):
        return np.sum(np.sin(x))
    cfg.act = np.sin
    Model.loss = other_loss
    np.testing.assert_allclose(g(X), np.cos(X))
    np.testing.assert_allclose(gh(X), np.cos(X))


@pytest.mark.parametrize("body", ["math.log(2.0, t)", "math.log(t, 3.0)",
                                  "math.hypot(t, 2.0, 3.0)"])
def test_math_calls_with_more_arguments_than_their_rule_are_refused(body):
    """``math.log(x, base)`` once took np.log's one-input rule: the base got no gradient."""
    import math
    fn = _from_file(f"def f(t):\n    return {body}\n", f"<safety-math-{abs(hash(body))}>",
                    namespace={"math": math})
    with pytest.raises(srcgrad.CompileError, match="argument"):
        srcgrad.grad(fn, strict=True)


def test_an_attribute_bound_by_a_later_build_is_followed():
    """Code the first build could not see (a loop over a dict argument, compiled when the
    argument's structure is known) binds ``c.act`` in a later build: it is watched too."""
    cfg = _Config()
    cfg.act = np.tanh

    def f(p, x):
        for W in p.values():
            c = cfg
            x = c.act(W @ x)
        return np.sum(x)
    p = {"a": np.eye(3) * 0.5, "b": np.eye(3) * 2.0}
    g = srcgrad.grad(f, wrt=(0, 1), strict=True)
    g(p, X)
    cfg.act = np.sin
    np.testing.assert_allclose(g(p, X)[1], numerical_grad(lambda v: f(p, v), [X.copy()], 0),
                               rtol=1e-6)
