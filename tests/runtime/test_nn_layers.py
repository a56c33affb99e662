"""``nn.Conv1d/Conv2d``, ``nn.LayerNorm``, ``nn.Embedding`` and ``nn.init`` against PyTorch:
values and gradients in float64 (1e-6 relative), node names, parameter names, reprs, error
messages, and the statistics and fan computations of the initialisers."""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest

import srcgrad

torch = pytest.importorskip("torch")
F, TF = srcgrad.nn.functional, torch.nn.functional
RNG = np.random.default_rng(3)


def _both(fn, arrays, grads=True):
    """``fn(lib, F, *tensors)`` on srcgrad and torch; compare outputs and gradients."""
    results = []
    for lib, f in ((srcgrad, F), (torch, TF)):
        ins = [lib.tensor(a, dtype=lib.float64, requires_grad=grads) if a is not None else None
               for a in arrays]
        out = fn(lib, f, *ins)
        if grads:
            weights = lib.tensor(np.sin(np.arange(out.numel())).reshape(tuple(out.shape)))
            (out * weights).sum().backward()
        results.append((out, [None if t is None else t.grad for t in ins]))
    (got, g_grads), (want, t_grads) = results
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6,
                               atol=1e-10)
    for a, b in zip(g_grads, t_grads):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-10)
    return got, want


def _r(*shape):
    return RNG.standard_normal(shape)


CONV = {
    "1d": (lambda L, f, x, w, b: f.conv1d(x, w, b), _r(2, 3, 9), _r(4, 3, 3), _r(4)),
    "1d-stride-pad-dil": (lambda L, f, x, w, b: f.conv1d(x, w, b, 2, 2, 2), _r(2, 3, 11),
                          _r(4, 3, 3), _r(4)),
    "1d-same": (lambda L, f, x, w, b: f.conv1d(x, w, b, padding="same", dilation=3),
                _r(1, 2, 10), _r(3, 2, 4), _r(3)),
    "1d-unbatched": (lambda L, f, x, w, b: f.conv1d(x, w, b), _r(3, 7), _r(2, 3, 2), _r(2)),
    "1d-groups": (lambda L, f, x, w, b: f.conv1d(x, w, b, groups=2), _r(2, 4, 8), _r(6, 2, 3),
                  _r(6)),
    "2d": (lambda L, f, x, w, b: f.conv2d(x, w, b), _r(2, 3, 6, 7), _r(4, 3, 3, 2), _r(4)),
    "2d-no-bias": (lambda L, f, x, w: f.conv2d(x, w, padding=1), _r(2, 3, 5, 5),
                   _r(2, 3, 3, 3)),
    "2d-stride-tuple": (lambda L, f, x, w, b: f.conv2d(x, w, b, (2, 1), (1, 2), (1, 2)),
                        _r(2, 2, 7, 8), _r(3, 2, 3, 3), _r(3)),
    "2d-same": (lambda L, f, x, w, b: f.conv2d(x, w, b, padding="same"), _r(1, 2, 6, 5),
                _r(3, 2, 4, 3), _r(3)),
    "2d-valid": (lambda L, f, x, w, b: f.conv2d(x, w, b, padding="valid"), _r(1, 2, 6, 5),
                 _r(3, 2, 2, 3), _r(3)),
    "2d-groups": (lambda L, f, x, w, b: f.conv2d(x, w, b, 1, 1, 1, 3), _r(2, 6, 5, 5),
                  _r(9, 2, 3, 3), _r(9)),
    "2d-depthwise": (lambda L, f, x, w: f.conv2d(x, w, None, 2, 1, 1, 4), _r(1, 4, 6, 6),
                     _r(4, 1, 3, 3)),
    "2d-unbatched": (lambda L, f, x, w, b: f.conv2d(x, w, b, stride=2), _r(3, 7, 7),
                     _r(2, 3, 3, 3), _r(2)),
    "2d-overlapping-windows": (lambda L, f, x, w, b: f.conv2d(x, w, b, dilation=2),
                               _r(2, 1, 8, 8), _r(1, 1, 3, 3), _r(1)),
}


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("name", sorted(CONV))
def test_conv_matches_torch(name):
    fn, *arrays = CONV[name]
    got, want = _both(fn, arrays)
    if got.dim() == 4 or (got.dim() == 3 and "1d" in name and "unbatched" not in name):
        assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__ \
            == "ConvolutionBackward0"


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("d", [1, 2])
def test_conv_modules_with_padding_modes_match_torch(mode, d):
    kwargs = dict(stride=1, padding=2 if mode == "zeros" else "same", dilation=1, groups=2,
                  padding_mode=mode)
    mine = getattr(srcgrad.nn, f"Conv{d}d")(4, 6, 3, **kwargs).double()
    ref = getattr(torch.nn, f"Conv{d}d")(4, 6, 3, **kwargs).double()
    mine.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    assert repr(mine) == repr(ref)
    assert [n for n, _ in mine.named_parameters()] == [n for n, _ in ref.named_parameters()] \
        == ["weight", "bias"]
    x = _r(2, 4, *([7] * d))
    out = []
    for lib, m in ((srcgrad, mine), (torch, ref)):
        t = lib.tensor(x, requires_grad=True)
        y = m(t)
        (y * y).sum().backward()
        out.append((y.detach().numpy(), t.grad.numpy(), m.weight.grad.numpy(),
                    m.bias.grad.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-10)


def test_conv_module_attributes_and_init_match_torch():
    for args, kw in (((3, 8, 3), {}), ((4, 4, (3, 2)), dict(stride=2, padding=1, dilation=2,
                                                            groups=2, bias=False))):
        mine, ref = srcgrad.nn.Conv2d(*args, **kw), torch.nn.Conv2d(*args, **kw)
        for attr in ("in_channels", "out_channels", "kernel_size", "stride", "padding",
                     "dilation", "groups", "padding_mode"):
            assert getattr(mine, attr) == getattr(ref, attr)
        assert repr(mine) == repr(ref)
        assert list(mine.state_dict()) == list(ref.state_dict())
        assert mine.weight.dtype == srcgrad.float32
        assert tuple(mine.weight.shape) == tuple(ref.weight.shape)
    big = srcgrad.nn.Conv2d(16, 32, 3)
    bound = 1 / math.sqrt(16 * 9)             # kaiming_uniform(a=√5) gives 1/√fan_in
    w, b = big.weight.detach().numpy(), big.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.98 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert np.abs(b).max() <= bound
    assert repr(srcgrad.nn.Conv1d(2, 3, 3, padding="same")) == \
        repr(torch.nn.Conv1d(2, 3, 3, padding="same"))


def _error(fn, lib, f):
    with pytest.raises(Exception) as info:
        fn(lib, f)
    return type(info.value).__name__.lstrip("_"), str(info.value).splitlines()[0]


ERRORS = {
    "conv2d-2d-input": lambda L, f: f.conv2d(L.ones(2, 3), L.ones(4, 3, 3, 3)),
    "conv1d-1d-input": lambda L, f: f.conv1d(L.ones(3), L.ones(2, 3, 1)),
    "channels": lambda L, f: f.conv2d(L.ones(1, 2, 5, 5), L.ones(4, 3, 3, 3)),
    "groups-weight": lambda L, f: f.conv2d(L.ones(1, 4, 5, 5), L.ones(3, 2, 3, 3), groups=2),
    "groups-channels": lambda L, f: f.conv2d(L.ones(1, 3, 5, 5), L.ones(4, 1, 3, 3), groups=2),
    "kernel-too-big": lambda L, f: f.conv2d(L.ones(1, 3, 2, 2), L.ones(4, 3, 3, 3)),
    "same-strided": lambda L, f: f.conv2d(L.ones(1, 3, 5, 5), L.ones(4, 3, 3, 3), stride=2,
                                          padding="same"),
    "bad-padding": lambda L, f: f.conv2d(L.ones(1, 3, 5, 5), L.ones(4, 3, 3, 3),
                                         padding="foo"),
    "negative-padding": lambda L, f: f.conv2d(L.ones(1, 3, 5, 5), L.ones(4, 3, 3, 3),
                                              padding=-1),
    "zero-stride": lambda L, f: f.conv2d(L.ones(1, 3, 5, 5), L.ones(4, 3, 3, 3), stride=0),
    "zero-dilation": lambda L, f: f.conv2d(L.ones(1, 3, 5, 5), L.ones(4, 3, 3, 3),
                                           dilation=0),
    "bias-size": lambda L, f: f.conv2d(L.ones(1, 3, 5, 5), L.ones(4, 3, 3, 3),
                                       bias=L.ones(3)),
    "stride-length": lambda L, f: f.conv2d(L.ones(1, 3, 5, 5), L.ones(4, 3, 3, 3),
                                           stride=(1, 1, 1)),
    "dtypes": lambda L, f: f.conv2d(L.ones(1, 3, 5, 5, dtype=L.float64), L.ones(4, 3, 3, 3)),
    "zero-groups": lambda L, f: f.conv2d(L.ones(1, 3, 5, 5), L.ones(4, 3, 3, 3), groups=0),
    "module-in-groups": lambda L, f: L.nn.Conv2d(3, 4, 3, groups=2),
    "module-out-groups": lambda L, f: L.nn.Conv2d(4, 3, 3, groups=2),
    "module-same-strided": lambda L, f: L.nn.Conv2d(3, 4, 3, stride=2, padding="same"),
    "layer_norm-shape": lambda L, f: f.layer_norm(L.ones(2, 3), [4]),
    "LayerNorm-shape": lambda L, f: L.nn.LayerNorm(4)(L.ones(2, 3)),
    "embedding-float": lambda L, f: f.embedding(L.ones(2), L.ones(3, 2)),
    "embedding-range": lambda L, f: f.embedding(L.tensor([5]), L.ones(3, 2)),
    "embedding-negative": lambda L, f: f.embedding(L.tensor([-1]), L.ones(3, 2)),
    "Embedding-padding": lambda L, f: L.nn.Embedding(3, 2, padding_idx=3),
    "embedding-padding": lambda L, f: f.embedding(L.tensor([1]), L.ones(3, 2), padding_idx=3),
    "init-fan-1d": lambda L, f: L.nn.init.xavier_uniform_(L.ones(3)),
    "init-mode": lambda L, f: L.nn.init.kaiming_normal_(L.ones(3, 3), mode="fan_x"),
    "init-gain": lambda L, f: L.nn.init.calculate_gain("swish"),
    "init-slope": lambda L, f: L.nn.init.calculate_gain("leaky_relu", True),
    "init-eye": lambda L, f: L.nn.init.eye_(L.ones(3)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    assert _error(ERRORS[name], srcgrad, F) == _error(ERRORS[name], torch, TF)


@pytest.mark.parametrize("shape,affine,bias", [((4,), True, True), ((3, 4), True, True),
                                               ((4,), False, False), ((4,), True, False)])
def test_layer_norm_matches_torch(shape, affine, bias):
    x = _r(2, 3, 4) * 3 + 1
    w = _r(*shape) if affine else None
    b = _r(*shape) if bias else None
    got, want = _both(lambda L, f, x, w, b: f.layer_norm(x, shape, w, b, eps=1e-3), [x, w, b])
    mine = srcgrad.nn.LayerNorm(shape, elementwise_affine=affine, bias=bias)
    ref = torch.nn.LayerNorm(shape, elementwise_affine=affine, bias=bias)
    assert repr(mine) == repr(ref)
    assert [n for n, _ in mine.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert list(mine.state_dict()) == list(ref.state_dict())
    for (_, p), (_, q) in zip(mine.named_parameters(), ref.named_parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    np.testing.assert_allclose(mine(srcgrad.tensor(x, dtype=srcgrad.float32)).detach().numpy(),
                               ref(torch.tensor(x, dtype=torch.float32)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("padding_idx", [None, 1, -1])
def test_embedding_matches_torch(padding_idx):
    idx = np.array([[0, 1, 3], [3, 3, 4]])
    table = _r(5, 3)
    got, want = _both(lambda L, f, w: f.embedding(L.tensor(idx), w, padding_idx), [table])
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__ == "EmbeddingBackward0"
    mine = srcgrad.nn.Embedding(10, 3, padding_idx=padding_idx)
    ref = torch.nn.Embedding(10, 3, padding_idx=padding_idx)
    assert repr(mine) == repr(ref)
    assert list(mine.state_dict()) == ["weight"] and mine.weight.requires_grad
    if padding_idx is not None:
        assert not mine.weight.detach().numpy()[padding_idx].any()


def test_embedding_max_norm_renormalises_rows_as_torch():
    idx = np.array([0, 2, 2])
    table = _r(4, 3) * 3
    rows = []
    for lib, f in ((srcgrad, F), (torch, TF)):
        w = lib.tensor(table.copy(), requires_grad=True)
        out = f.embedding(lib.tensor(idx), w, max_norm=1.5, norm_type=3.0)
        out.sum().backward()
        rows.append((out.detach().numpy(), w.detach().numpy(), w.grad.numpy()))
    for a, b in zip(*rows):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_embedding_from_pretrained_and_freeze():
    weights = srcgrad.tensor(_r(4, 2))
    frozen = srcgrad.nn.Embedding.from_pretrained(weights)
    assert not frozen.weight.requires_grad and frozen.weight is not weights
    np.testing.assert_array_equal(frozen(srcgrad.tensor([3])).numpy(), weights.numpy()[[3]])
    assert srcgrad.nn.Embedding.from_pretrained(weights, freeze=False).weight.requires_grad


def test_functional_signatures_match_torch():
    for name in ("layer_norm", "embedding"):
        mine = inspect.signature(getattr(F, name)).parameters
        ref = inspect.signature(getattr(TF, name)).parameters
        assert [(p.name, p.default) for p in mine.values()] == \
            [(p.name, p.default) for p in ref.values()]
    for name in ("conv1d", "conv2d"):                    # torch's are builtins: read the doc
        doc = getattr(TF, name).__doc__.strip().splitlines()[0]
        ref = [p.split("=") for p in doc[doc.index("(") + 1:doc.index(")")].split(", ")]
        mine = inspect.signature(getattr(F, name)).parameters.values()
        assert [(p.name, None if p.default is inspect.Parameter.empty else str(p.default))
                for p in mine] == [(p[0], p[1] if len(p) > 1 else None) for p in ref]


def test_padding_mode_is_checked():                 # torch prints a set: its order varies
    with pytest.raises(ValueError, match=r"Invalid padding string 'foo', should be one of "):
        srcgrad.nn.Conv2d(3, 4, 3, padding="foo")
    with pytest.raises(ValueError, match=r"padding_mode must be one of \{.*'reflect'.*\}, but "
                       "got padding_mode='foo'"):
        srcgrad.nn.Conv2d(3, 4, 3, padding_mode="foo")


# --------------------------------------------------------------------------------- nn.init
@pytest.mark.parametrize("shape", [(5, 3), (8, 4, 3), (6, 2, 3, 5), (2, 3, 1, 1, 4)])
def test_fans_match_torch(shape):
    got = srcgrad.nn.init._calculate_fan_in_and_fan_out(srcgrad.empty(*shape))
    assert got == torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))


def test_gains_match_torch():
    for name, param in [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None),
                        ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
                        ("leaky_relu", 3), ("selu", None)]:
        assert srcgrad.nn.init.calculate_gain(name, param) == \
            torch.nn.init.calculate_gain(name, param)


def _stats(init, shape=(400, 300, 3), **kw):
    t = srcgrad.empty(*shape, dtype=srcgrad.float64)
    before = t._version
    out = init(t, **kw)
    assert out is t and t._version > before and t.grad_fn is None
    return t.numpy()


def test_initialisers_have_the_right_distributions():
    I = srcgrad.nn.init
    fan_in, fan_out = 300 * 3, 400 * 3
    x = _stats(I.uniform_, a=-2.0, b=3.0)
    assert x.min() >= -2 and x.max() <= 3 and abs(x.mean() - 0.5) < 0.02
    x = _stats(I.normal_, mean=1.0, std=2.0)
    assert abs(x.mean() - 1) < 0.02 and abs(x.std() - 2) < 0.02
    for init, kw, std, uniform in [
            (I.xavier_uniform_, {"gain": 2.0}, 2 * math.sqrt(2 / (fan_in + fan_out)), True),
            (I.xavier_normal_, {}, math.sqrt(2 / (fan_in + fan_out)), False),
            (I.kaiming_uniform_, {"nonlinearity": "relu"}, math.sqrt(2 / fan_in), True),
            (I.kaiming_uniform_, {"a": math.sqrt(5)}, math.sqrt(1 / 3 / fan_in), True),
            (I.kaiming_normal_, {"mode": "fan_out", "nonlinearity": "tanh"},
             5 / 3 / math.sqrt(fan_out), False)]:
        x = _stats(init, **kw)
        assert abs(x.std() / std - 1) < 0.01, init
        assert abs(x.mean()) < 0.01 * std * 10
        if uniform:
            assert x.max() <= math.sqrt(3) * std and x.max() > 0.99 * math.sqrt(3) * std
    x = _stats(I.trunc_normal_, std=1.0, a=-0.5, b=1.0)
    assert x.min() >= -0.5 and x.max() <= 1.0
    for init, value in ((I.zeros_, 0), (I.ones_, 1)):
        assert (_stats(init) == value).all()
    assert (_stats(I.constant_, val=0.25) == 0.25).all()
    np.testing.assert_array_equal(_stats(I.eye_, shape=(3, 4)), np.eye(3, 4))


def test_init_on_a_parameter_that_requires_grad_is_not_recorded():
    layer = srcgrad.nn.Linear(4, 3)
    srcgrad.nn.init.xavier_uniform_(layer.weight)
    srcgrad.nn.init.zeros_(layer.bias)
    assert layer.weight.is_leaf and layer.weight.requires_grad
    assert not layer.bias.detach().numpy().any()


def test_init_of_zero_element_tensor_warns_as_torch():
    for lib in (srcgrad, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.nn.init.kaiming_uniform_(lib.empty(0, 3))
        assert [str(w.message) for w in caught] == ["Initializing zero-element tensors is a no-op"]


def test_seeded_initialisation_is_reproducible():
    srcgrad.manual_seed(0)
    a = srcgrad.nn.init.normal_(srcgrad.empty(5)).numpy().copy()
    srcgrad.manual_seed(0)
    np.testing.assert_array_equal(a, srcgrad.nn.init.normal_(srcgrad.empty(5)).numpy())
    gen = np.random.default_rng(1)
    b = srcgrad.nn.init.uniform_(srcgrad.empty(5), generator=gen).numpy()
    np.testing.assert_array_equal(b, np.random.default_rng(1).uniform(0, 1, 5).astype(b.dtype))


def test_second_order_through_conv_and_layer_norm_matches_torch():
    x0, w0 = _r(1, 2, 5, 5), _r(3, 2, 3, 3)
    out = []
    for lib, f in ((srcgrad, F), (torch, TF)):
        x = lib.tensor(x0, requires_grad=True)
        w = lib.tensor(w0, requires_grad=True)
        y = f.layer_norm(f.conv2d(x, w, padding=1, stride=2).tanh(), (3, 3))
        (gx,) = lib.autograd.grad((y ** 3).sum(), x, create_graph=True)
        (gw,) = lib.autograd.grad((gx ** 2).sum(), w)
        out.append((gx.detach().numpy(), gw.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-10)


def test_float32_conv_module_matches_torch():
    ref = torch.nn.Conv2d(3, 5, 3, padding=1)
    mine = srcgrad.nn.Conv2d(3, 5, 3, padding=1)
    mine.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    x = _r(2, 3, 6, 6).astype(np.float32)
    got = mine(srcgrad.tensor(x))
    assert got.dtype == srcgrad.float32
    np.testing.assert_allclose(got.detach().numpy(), ref(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)
