"""Writes into objects the function did not make (argument objects, globals): the compiled
code refuses them, naming the line (on the path that writes), and the eager fallback runs the
function on copies of the caller's objects, leaving no engine array in a global one.  Each
case gives the gradient of NumPy's own run (central finite differences of the plain function
on fresh objects) with the caller's objects unchanged, or a CompileError naming the line."""

from __future__ import annotations

import copy
import inspect
import threading
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

import srcgrad
from srcgrad.errors import CompileError

X = np.array([0.5, -1.0, 2.0])


class Obj:
    def __init__(self):
        self.W = np.array([3.0, 1.0, 2.0])
        self.d = {"k": 1.0}
        self.lst = [1.0, 2.0]

    def step(self, x):
        self.W *= 2                                      # write
        return np.sum(x * self.W)

    def dset(self, x):
        self.d["n"] = self.d.get("n", 0) + 1             # write
        return np.sum(x ** 2) * self.d["n"]

    def read(self, x):
        return np.sum(x * self.W) * self.d["k"]


class P:
    def __init__(self):
        self.inner = Obj()


class RNN:
    def __init__(self):
        self.W = 0.5 * np.array([[0.3, -0.2], [0.1, 0.4]])
        self.hs = {}

    def forward(self, xs):
        h = np.zeros(2)
        for t in range(len(xs)):
            h = np.tanh(self.W @ h + xs[t])
            self.hs[t] = h                               # write
        return np.sum(self.hs[len(xs) - 1] ** 2)


GO = Obj()


def f_dict(x, o):
    o.d["k"] = 3.0                                       # write
    return np.sum(x * o.d["k"])


def f_arr(x, o):
    o.W[:] = 5.0                                         # write
    return np.sum(x * o.W)


def f_alias(x, o):
    W = o.W
    W *= 2                                               # write
    return np.sum(x * o.W)


def f_alias_add(x, o):
    W = o.W
    W += x                                               # write
    return np.sum(x * o.W)


def f_alias_item(x, o):
    W = o.W
    W[0] = 4.0                                           # write
    return np.sum(x * o.W)


def f_store(x, o):
    o.d["k"] = x                                         # write
    return np.sum(o.d["k"] ** 2)


def f_list_item(x, o):
    o.lst[0] = 5.0                                       # write
    return np.sum(x * o.lst[0])


def f_nested(x, p):
    p.inner.d["k"] = 3.0                                 # write
    return np.sum(x * p.inner.d["k"])


def f_global(x):
    GO.W[0] = 7.0                                        # write
    return np.sum(x * GO.W)


def f_sort(x, o):
    o.W.sort()                                           # write
    return np.sum(x * o.W)


def f_fill(x, o):
    o.W.fill(2.0)                                        # write
    return np.sum(x * o.W)


def f_append(x, o):
    o.lst.append(3.0)                                    # write
    return np.sum(x * o.lst[-1])


def f_clear(x, o):
    o.d.clear()                                          # write
    return np.sum(x * o.d.get("k", 5.0))


def f_update(x, o):
    o.d.update(k=4.0)                                    # write
    return np.sum(x * o.d["k"])


def f_pop(x, o):
    o.lst.pop()                                          # write
    return np.sum(x * o.lst[-1])


def f_step(x, o):
    return o.step(x)


def f_dset(x, o):
    return o.dset(x)


def f_attr_add(x, o):
    o.W += x                                             # write
    return np.sum(x * o.W)


def f_put(x, o):
    np.put(o.W, [0], [9.0])                              # write
    return np.sum(x * o.W)


def f_out(x, o):
    np.add(o.W, 1.0, out=o.W)                            # write
    return np.sum(x * o.W)


def f_del(x, o):
    del o.d["k"]                                         # write
    return np.sum(x * o.d.get("k", 2.0))


def f_item_add(x, o):
    o.W[0] += 1.0                                        # write
    return np.sum(x * o.W)


def _zero(a):
    a[:] = 0.0
    return a


def _norm(a):
    return np.sqrt(np.sum(a ** 2))


def f_helper(x, o):
    _zero(o.W)                                           # write
    return np.sum(x * o.W)


def f_view(x, o):
    v = o.W[:2]
    v[:] = 3.0                                           # write
    return np.sum(x * o.W)


def f_shuffle(x, o):
    np.random.shuffle(o.lst)                             # write
    return np.sum(x * o.lst[0])


def f_rnn(x, rnn):
    return rnn.forward(x.reshape(-1, 2)[:2] if x.size >= 4 else np.stack([x[:2], x[1:]]))


CASES = [f_dict, f_arr, f_alias, f_alias_add, f_alias_item, f_store, f_list_item, f_nested,
         f_global, f_sort, f_fill, f_append, f_clear, f_update, f_pop, f_step, f_dset,
         f_attr_add, f_put, f_out, f_del, f_item_add, f_helper, f_view, f_rnn]
_CALLED = {f_step: Obj.step, f_dset: Obj.dset, f_rnn: RNN.forward}


def _objects(f):
    if f is f_global:
        return ()
    return (P(),) if f is f_nested else (RNN(),) if f is f_rnn else (Obj(),)


def _state(value):
    """A comparable picture of an object's state (arrays by value and type)."""
    if hasattr(value, "__dict__"):
        return {k: _state(v) for k, v in vars(value).items()}
    if isinstance(value, dict):
        return {k: _state(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_state(v) for v in value]
    if isinstance(value, np.ndarray):
        return (type(value).__name__, value.tolist())
    return (type(value).__name__, value)


def _holds_engine_array(value):
    return "Array" in repr(_state(value)) or "Tensor" in repr(_state(value))


def _write_line(f):
    code = _CALLED.get(f, f)
    lines, start = inspect.getsourcelines(code)
    return start + next(i for i, line in enumerate(lines) if "# write" in line)


def _names_line(exc, f):
    line = _write_line(f)
    return (exc.filename == __file__ and exc.lineno == line) or f"{__file__}:{line}" in str(exc)


def _numeric(f):
    def plain(x):
        GO.__init__()
        return f(x, *_objects(f))
    eps = 1e-6
    return np.array([(plain(X + eps * e) - plain(X - eps * e)) / (2 * eps) for e in np.eye(3)])


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "default"])
@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_write_into_an_outside_object_is_right_or_refused(f, strict):
    GO.__init__()
    objects = _objects(f)
    before = [copy.deepcopy(_state(o)) for o in objects]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        try:
            got = srcgrad.grad(f, strict=strict)(X, *objects)
        except CompileError as exc:
            assert _names_line(exc, f), str(exc)
            got = None
    assert [_state(o) for o in objects] == before          # the caller's objects: unchanged
    assert not _holds_engine_array(GO)
    if got is not None:
        assert_allclose(got, _numeric(f), rtol=1e-5, atol=1e-6)
    if strict:
        assert got is None                     # the compiled code models no such write


def test_the_rnn_in_default_mode_leaves_plain_arrays_in_a_global_object():
    model = RNN()
    xs = np.array([[0.2, -0.1], [0.4, 0.3], [-0.5, 0.1]])

    def loss(xs):
        return model.forward(xs)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        got = srcgrad.grad(loss)(xs)
    assert set(model.hs) == {0, 1, 2}
    assert all(type(h) is np.ndarray for h in model.hs.values())
    eps = 1e-6
    want = np.zeros_like(xs)
    for i in np.ndindex(xs.shape):
        e = np.zeros_like(xs)
        e[i] = eps
        want[i] = (RNN().forward(xs + e) - RNN().forward(xs - e)) / (2 * eps)
    assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    with pytest.raises(CompileError) as info:
        srcgrad.grad(loss, strict=True)(xs)
    assert f"{__file__}:{_write_line(f_rnn)}" in str(info.value)


def test_a_write_on_a_branch_not_taken_compiles():
    def f(x, o):
        if np.sum(x) > 100:
            o.d["k"] = 3.0                               # write
        return np.sum(x * o.d["k"] * o.W)

    o = Obj()
    g = srcgrad.grad(f, strict=True)
    assert_allclose(g(X, o), o.W)
    with pytest.raises(CompileError) as info:
        g(X + 100, o)
    assert f"{__file__}:{_write_line(f)}" in str(info.value)
    assert _state(o) == _state(Obj())


def test_reads_of_an_argument_object_still_compile():
    def f(x, o):
        return o.read(x) + np.sum(x * o.W.copy()) * o.d.get("k", 0.0) + o.lst[0] + \
            _norm(o.W)

    o = Obj()
    with warnings.catch_warnings():
        warnings.simplefilter("error", srcgrad.FallbackWarning)
        got = srcgrad.grad(f, strict=True)(X, o)
    assert_allclose(got, 2 * Obj().W)
    assert _state(o) == _state(Obj())


def test_an_object_that_cannot_be_copied_is_refused_by_the_fallback():
    o = Obj()
    o.lock = threading.Lock()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        with pytest.raises(CompileError, match=r"argument #2 \(a Obj\) cannot be copied"):
            srcgrad.grad(f_step)(X, o)
    assert_allclose(o.W, Obj().W)


def test_jvp_in_default_mode_leaves_the_caller_object_alone():
    o = Obj()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        value, tangent = srcgrad.jvp(f_step, (X, o), (np.ones(3), None))
    assert_allclose(tangent, np.sum(2 * Obj().W))
    assert_allclose(value, np.sum(X * 2 * Obj().W))
    assert _state(o) == _state(Obj())


class Stack:
    def __init__(self):
        self.layers = [Obj(), Obj()]
        self.name = "stack"

    def forward(self, x):
        return self.layers[0].read(x) + self.layers[1].read(x) * (self.name == "stack")


def test_methods_of_objects_an_argument_holds_still_compile():
    def f(x, s):
        return s.forward(x)

    s = Stack()
    with warnings.catch_warnings():
        warnings.simplefilter("error", srcgrad.FallbackWarning)
        got = srcgrad.grad(f, strict=True)(X, s)
    assert_allclose(got, 2 * Obj().W)
    assert [_state(layer) for layer in s.layers] == [_state(Obj())] * 2
