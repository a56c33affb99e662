"""``optim.AdamW``, ``optim.RMSprop`` and ``optim.lr_scheduler`` against PyTorch step for step,
and ``zero_grad(set_to_none=False)`` zeroing the same ``.grad`` object in place."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import srcgrad

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(11)
X, Y = RNG.standard_normal((8, 3)), RNG.standard_normal((8, 2))
W0, B0 = RNG.standard_normal((3, 2)), RNG.standard_normal(2)


def _trajectory(lib, make, steps=12, closure=False):
    w = lib.tensor(W0.copy(), requires_grad=True)
    b = lib.tensor(B0.copy(), requires_grad=True)
    opt = make(lib, [{"params": [w]}, {"params": [b], "lr": 0.03}])
    x, y = lib.tensor(X), lib.tensor(Y)
    seen = []
    for _ in range(steps):
        def loss_fn():
            opt.zero_grad()
            loss = (((x @ w + b).tanh() - y) ** 2).mean()
            loss.backward()
            return loss
        if closure:
            opt.step(loss_fn)
        else:
            loss_fn()
            opt.step()
        seen.append((w.detach().numpy().copy(), b.detach().numpy().copy()))
    return seen


OPTIMIZERS = {
    "AdamW": lambda L, p: L.optim.AdamW(p, lr=0.05),
    "AdamW-wd-amsgrad": lambda L, p: L.optim.AdamW(p, lr=0.05, weight_decay=0.3, amsgrad=True),
    "AdamW-maximize": lambda L, p: L.optim.AdamW(p, lr=0.01, betas=(0.8, 0.9), eps=1e-6,
                                                maximize=True),
    "Adam-wd": lambda L, p: L.optim.Adam(p, lr=0.05, weight_decay=0.2),
    "RMSprop": lambda L, p: L.optim.RMSprop(p),
    "RMSprop-momentum": lambda L, p: L.optim.RMSprop(p, lr=0.01, momentum=0.9, alpha=0.9),
    "RMSprop-centered": lambda L, p: L.optim.RMSprop(p, lr=0.01, centered=True, eps=1e-4),
    "RMSprop-all": lambda L, p: L.optim.RMSprop(p, lr=0.02, momentum=0.5, centered=True,
                                                weight_decay=0.1, maximize=True),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_steps_match_torch(name):
    mine = _trajectory(srcgrad, OPTIMIZERS[name], closure=name.endswith("all"))
    ref = _trajectory(torch, OPTIMIZERS[name], closure=name.endswith("all"))
    for (w1, b1), (w2, b2) in zip(mine, ref):
        np.testing.assert_allclose(w1, w2, rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(b1, b2, rtol=1e-6, atol=1e-12)
    assert not np.allclose(mine[0][0], mine[-1][0])          # it did move


def test_optimizer_defaults_and_state_keys_match_torch():
    for name in ("AdamW", "RMSprop"):
        opts = []
        for lib in (srcgrad, torch):
            p = lib.ones(2, requires_grad=True)
            opt = getattr(lib.optim, name)([p])
            p.sum().backward()
            opt.step()
            opts.append(opt)
        mine, ref = opts
        shared = {k: v for k, v in ref.defaults.items() if k in mine.defaults}
        assert {k: mine.defaults[k] for k in shared} == shared
        for key in ("lr", "eps", "weight_decay"):
            assert key in mine.defaults
        assert set(next(iter(mine.state.values()))) == set(next(iter(ref.state.values())))


@pytest.mark.parametrize("kwargs,message", [
    ({"lr": -1}, "Invalid learning rate: -1"), ({"eps": -1}, "Invalid epsilon value: -1"),
    ({"momentum": -1}, "Invalid momentum value: -1"), ({"alpha": -1}, "Invalid alpha value: -1"),
    ({"weight_decay": -1}, "Invalid weight_decay value: -1")])
def test_rmsprop_argument_errors_match_torch(kwargs, message):
    for lib in (srcgrad, torch):
        with pytest.raises(ValueError, match=f"^{message}$"):
            lib.optim.RMSprop([lib.ones(1, requires_grad=True)], **kwargs)


def _lrs(lib, make, epochs=25, by_epoch=False):
    p = lib.ones(1, requires_grad=True)
    opt = lib.optim.SGD([{"params": [p]}, {"params": [lib.ones(1, requires_grad=True)],
                                            "lr": 0.5}], lr=0.1)
    sched = make(lib.optim.lr_scheduler, opt)
    seen = [sched.get_last_lr()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in range(1, epochs):
            opt.step()
            sched.step(epoch) if by_epoch else sched.step()
            seen.append(sched.get_last_lr())
            assert [g["lr"] for g in opt.param_groups] == seen[-1]
    return seen, sched


SCHEDULES = {
    "StepLR": lambda S, o: S.StepLR(o, step_size=3),
    "StepLR-gamma": lambda S, o: S.StepLR(o, 4, gamma=0.7),
    "Cosine": lambda S, o: S.CosineAnnealingLR(o, T_max=10),
    "Cosine-eta": lambda S, o: S.CosineAnnealingLR(o, 7, eta_min=0.01),
    "Exponential": lambda S, o: S.ExponentialLR(o, 0.9),
    "MultiStep": lambda S, o: S.MultiStepLR(o, [2, 5, 5, 9], gamma=0.5),
    "Lambda": lambda S, o: S.LambdaLR(o, lambda e: 1 / (1 + e)),
}


@pytest.mark.parametrize("by_epoch", [False, True])
@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedules_match_torch(name, by_epoch):
    mine, sched = _lrs(srcgrad, SCHEDULES[name], by_epoch=by_epoch)
    ref, _ = _lrs(torch, SCHEDULES[name], by_epoch=by_epoch)
    np.testing.assert_allclose(mine, ref, rtol=1e-12, atol=0)
    assert sched.last_epoch == 24 and sched.base_lrs == [0.1, 0.5]
    assert "optimizer" not in sched.state_dict()


def test_scheduler_warns_when_stepped_before_optimizer_as_torch():
    for lib in (srcgrad, torch):
        opt = lib.optim.SGD([lib.ones(1, requires_grad=True)], lr=0.1)
        sched = lib.optim.lr_scheduler.StepLR(opt, 2)
        with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step"):
            sched.step()
        opt2 = lib.optim.SGD([lib.ones(1, requires_grad=True)], lr=0.1)
        sched2 = lib.optim.lr_scheduler.CosineAnnealingLR(opt2, 5)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            opt2.step()
            sched2.step()
        assert opt2.param_groups[0]["initial_lr"] == 0.1


def test_scheduler_import_spellings():
    from srcgrad.optim.lr_scheduler import CosineAnnealingLR, StepLR
    assert srcgrad.optim.lr_scheduler.StepLR is StepLR
    assert srcgrad.optim.lr_scheduler.CosineAnnealingLR is CosineAnnealingLR
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        StepLR([], 1)


@pytest.mark.parametrize("owner", ["optimizer", "module"])
def test_zero_grad_keeps_the_same_grad_object(owner):
    for lib in (srcgrad, torch):
        model = lib.nn.Linear(3, 2)
        opt = lib.optim.AdamW(model.parameters())
        model(lib.ones(4, 3)).sum().backward()
        grads = [p.grad for p in model.parameters()]
        assert all(g.abs().sum().item() > 0 for g in grads)
        (opt if owner == "optimizer" else model).zero_grad(set_to_none=False)
        assert all(p.grad is g for p, g in zip(model.parameters(), grads))
        assert all(g.abs().sum().item() == 0 for g in grads)
        model(lib.ones(4, 3)).sum().backward()
        assert all(p.grad is g for p, g in zip(model.parameters(), grads))
        (opt if owner == "optimizer" else model).zero_grad()
        assert all(p.grad is None for p in model.parameters())


def test_new_optimizers_train_a_small_model():
    srcgrad.manual_seed(0)
    model = srcgrad.nn.Sequential(srcgrad.nn.Linear(3, 8), srcgrad.nn.Tanh(),
                                  srcgrad.nn.Linear(8, 2))
    x, y = srcgrad.tensor(X, dtype=srcgrad.float32), srcgrad.tensor(Y, dtype=srcgrad.float32)
    for cls in (srcgrad.optim.AdamW, srcgrad.optim.RMSprop):
        opt = cls(model.parameters(), lr=0.01)
        sched = srcgrad.optim.lr_scheduler.CosineAnnealingLR(opt, 50)
        first = None
        for _ in range(50):
            opt.zero_grad()
            loss = srcgrad.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            sched.step()
            first = loss.item() if first is None else first
        assert loss.item() < first
        assert model[0].weight.dtype == srcgrad.float32
