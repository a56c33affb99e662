"""Code run twice, once with ``torch`` bound to PyTorch and once to srcgrad, printing the same.

Each snippet is the text of a seed example (``../shared/seeds``) or of one item of the contract's
list of messages (SPEC.md), with deterministic data wherever values are printed.  ``run_snippet``
executes one and returns what it printed, with exceptions and warnings shown as ``Class: first
line``. ``record_torch.py`` stores PyTorch 2.13's output in ``data/torch_outputs.json``.
"""

from __future__ import annotations

import contextlib
import io
import re
import textwrap
import warnings

import numpy as np

SNIPPETS: dict[str, str] = {}


def snippet(name: str, code: str) -> None:
    SNIPPETS[name] = textwrap.dedent(code).strip() + "\n"


# ------------------------------------------------------------------ the seed notes' examples
snippet("seed_Q_backward_gradient", """
    a = torch.tensor([2., 3.], requires_grad=True)
    b = torch.tensor([6., 4.], requires_grad=True)
    Q = 3*a**3 - b**2
    external_grad = torch.tensor([1., 1.])
    Q.backward(gradient=external_grad)
    print(9*a**2 == a.grad)
    print(-2*b == b.grad)
    print(a.grad, b.grad)
    print(Q)
""")
snippet("seed_retain_grad", """
    a = torch.tensor([1., 2.], requires_grad=True)
    b = 3*a**3
    c = b * a
    b.retain_grad()
    c.backward(gradient=torch.tensor([1.,1.]))
    print(a.grad)
    print(b.grad)
""")
snippet("seed_requires_grad_propagates", """
    x = torch.rand(5, 5)
    y = torch.rand(5, 5)
    z = torch.rand((5, 5), requires_grad=True)
    a = x + y
    b = x + y + z
    print(f"Does `a` require gradients?: {a.requires_grad}")
    print(f"Does `b` require gradients?: {b.requires_grad}")
""")
snippet("seed_leaf_and_intermediate", """
    a = torch.tensor(1.0, requires_grad=True)
    b = torch.tensor(2.0, requires_grad=True)
    c = a*b
    c.backward()
    show_warning(lambda: print(c.grad))
    print(a.grad)
    print(b.grad)
""")
snippet("seed_backward_on_tensor", """
    x1 = torch.tensor([[1., -2., 3., 0.5], [0., 1., 2., -1.]], requires_grad=True)
    x2 = torch.tensor([[0.5, 0.5, -1., 2.], [1., 1., 1., 1.]], requires_grad=True)
    y = x1 + x2
    y.backward(y)
    print(x1.grad)
""")
snippet("seed_layer_output_backward", """
    model = nn.Sequential(nn.Linear(10, 20))
    with torch.no_grad():
        model[0].weight.copy_(torch.arange(200.).reshape(20, 10) / 100 - 1)
        model[0].bias.fill_(0.5)
    x = torch.arange(20.).reshape(2, 10) / 10
    x.requires_grad_(True)
    out = model(x)
    out.backward(out)
    print(x.grad)
    show_warning(lambda: print(out.grad))
""")
snippet("seed_retain_grad_vs_requires_grad", """
    model = nn.Sequential(nn.Linear(10, 20))
    x = torch.ones((2, 10))
    out = model(x)
    out.backward(out)
    print(x.grad)
    show_warning(lambda: print(out.grad))
    x1 = torch.ones((2, 10))
    out1 = model(x1)
    out1.retain_grad()
    show_error(lambda: setattr(out1, "requires_grad", False))
    show_error(lambda: x1.retain_grad())
    out1.backward(out1)
    print(x1.grad)
    print(out1.grad is not None, out1.grad.shape)
    x2 = torch.ones((2, 10), requires_grad=True)
    out2 = model(x2)
    out2.backward(out2)
    print(x2.grad is not None)
    show_warning(lambda: print(out2.grad))
    for name, param in model.named_parameters():
        print(name)
        print(param.shape)
        print(param.requires_grad)
""")
snippet("seed_bce_with_logits", """
    x = torch.ones(5)
    y = torch.zeros(3)
    w = (torch.arange(15.).reshape(5, 3) - 7) / 10
    w.requires_grad_(True)
    b = torch.tensor([0.1, -0.2, 0.3], requires_grad=True)
    z = torch.matmul(x, w)+b
    loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
    loss.backward()
    print([w.grad, b.grad])
    print(z.grad_fn.name(), loss.grad_fn.name())
""")
snippet("seed_no_grad_detach", """
    x = torch.ones(5)
    w = torch.ones(5, 3, requires_grad=True)
    b = torch.ones(3, requires_grad=True)
    z = torch.matmul(x, w)+b
    print(z.requires_grad)
    with torch.no_grad():
        z = torch.matmul(x, w)+b
    print(z.requires_grad)
    z = torch.matmul(x, w)+b
    z_det = z.detach()
    print(z_det.requires_grad)
    with torch.no_grad():
        print((x ** 2).requires_grad)
""")
snippet("seed_check_simple_ops", """
    def check(x):
        print(f'is_leaf: {x.is_leaf}, requires_grad: {x.requires_grad}, '
              f'grad_fn: {type(x.grad_fn).__name__ if x.grad_fn else None}, grad: {x.grad}')
    x = torch.rand(3)
    check(x)
    x = torch.rand(3, requires_grad=True)
    check(x)
    x = torch.rand(3, requires_grad=True) + 1
    show_warning(lambda: check(x))
    x = torch.rand(3) + 1
    check(x)
    lin = nn.Linear(3, 5)
    check(lin.weight)
    x = torch.rand(1, 3)
    y = lin(x)
    show_warning(lambda: check(y))
    gt = torch.rand(1, 5)
    l = nn.L1Loss()(y, gt)
    show_warning(lambda: check(l))
    l.backward()
    print(lin.weight.grad is not None, lin.weight.grad.shape)
    print(x.grad, gt.grad, lin.weight.is_leaf)
""")
snippet("seed_requires_grad_on_linear_output", """
    x = torch.rand(1, 3)
    y = nn.Linear(3, 5)(x)
    show_error(lambda: setattr(y, "requires_grad", False))
    x = torch.rand(3, requires_grad=True)
    x.requires_grad = True
    print(x.requires_grad_(True) is x)
    p = nn.Parameter(torch.ones(3))
    print(p.is_leaf, p.requires_grad, p.grad_fn, p.grad)
    print(p)
    print(nn.Linear(3, 5).weight.is_leaf)
""")
snippet("seed_backward_errors", """
    show_error(lambda: torch.ones(3).backward())
    show_error(lambda: torch.ones(3, requires_grad=True).mul(2).backward())
    show_error(lambda: torch.ones(3, dtype=torch.long, requires_grad=True))
""")
snippet("seed_eval_no_grad", """
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    model.eval()
    x = torch.ones(2, 4)
    with torch.no_grad():
        y = model(x)
    print(y.requires_grad, y.grad_fn, model.training, model[1].training)
    model.train()
    print(model.training, model[1].training)
""")
snippet("seed_sdf_normals", """
    class Backbone(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = nn.Linear(3, 8)
            self.l2 = nn.Linear(8, 1)
            with torch.no_grad():
                self.l1.weight.copy_(torch.arange(24.).reshape(8, 3) / 24 - 0.5)
                self.l1.bias.fill_(0.1)
                self.l2.weight.copy_(torch.arange(8.).reshape(1, 8) / 8 - 0.5)
                self.l2.bias.fill_(-0.2)
        def forward(self, x):
            return self.l2(torch.tanh(self.l1(x)))
    backbone = Backbone()
    input = torch.tensor([[0.1, 0.2, 0.3], [-0.5, 0.4, 0.0]])
    with torch.set_grad_enabled(True):
        input.requires_grad_(True)
        sigma = backbone(input)
        normal = - torch.autograd.grad(torch.sum(sigma), input, create_graph=True)[0]
    print(sigma)
    print(normal)
    loss = (normal ** 2).sum()
    loss.backward()
    print(backbone.l1.weight.grad)
    print(input.grad)
""")
snippet("seed_clone_detach", """
    x = torch.tensor([1., 2.], requires_grad=True)
    c = x.clone()
    d = x.detach()
    print(c.is_leaf, c.requires_grad, c.grad_fn.name())
    print(d.is_leaf, d.requires_grad, d.grad_fn)
    @torch.no_grad()
    def f(t):
        return t * 2
    print(f(x).requires_grad)
    with torch.no_grad():
        with torch.enable_grad():
            print((x * 2).requires_grad)
    with torch.set_grad_enabled(False):
        print((x * 2).requires_grad)
    print(torch.is_grad_enabled())
""")

# -------------------------------------------------------------- the contract's messages
snippet("node_names", """
    a = torch.tensor([2., 3.], requires_grad=True)
    m = torch.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
    names = [
        a.sum(), a.sum(0), a.mean(), a.mean(0), a ** 3, a ** a, 2 ** a, 1 - a, a - 1, a + 1,
        a / 2, 2 / a, -a, a * a, m.T, m.t(), m.transpose(0, 1), m.permute(1, 0),
        m @ torch.ones(3, 2), m @ torch.ones(3), a @ a, m.reshape(6), m.view(6), m.flatten(),
        m[0], m[:, 1], m[0, 1], m[[0, 1]], m[m > 2], m[1:], m[None], m[..., 0],
        m.unsqueeze(0), m.unsqueeze(0).squeeze(), m.unsqueeze(0).squeeze(0),
        torch.cat([m, m]), torch.stack([m, m]), m.max(), m.max(0)[0], m.min(),
        torch.maximum(m, m), m.clamp(0, 1), m.clamp(min=0), torch.where(m > 2, m, 0.),
        m.exp(), m.tanh(), m.sigmoid(), m.relu(), torch.softmax(m, 1), torch.log_softmax(m, 1),
        m.abs(), m.sqrt(), m.pow(2), m.prod(), m.std(), m.var(), m.clone(), m.double(),
        m.cumsum(0), m.sin(), m.cos(), m.log(), m.expand(3, 2, 3), m.sum(1, keepdim=True),
        m.masked_fill(m > 2, 0.), torch.ones(4, 2, 3, requires_grad=True) @ torch.ones(3, 2),
    ]
    print([t.grad_fn.name() for t in names])
""")
snippet("next_functions", """
    a = torch.tensor([2., 3.], requires_grad=True)
    q = 3 * a ** 3
    def show(fn):
        return [(type(f).__name__ if f is not None else None, i) for f, i in fn.next_functions]
    print(show(q.grad_fn), show(q.grad_fn.next_functions[0][0]))
    print(show((1 - a).grad_fn), show((a + a).grad_fn), show((a * 2 + 1).grad_fn))
    lin = nn.Linear(3, 5)
    y = lin(torch.ones(2, 3))
    print(show(y.grad_fn))
    print(show(torch.nn.functional.cross_entropy(y, torch.tensor([0, 1])).grad_fn))
    x = torch.ones(2, requires_grad=True)
    print(x.grad_fn, (x * 2).grad_fn.next_functions[0][0].variable is x)
""")
snippet("leaf_rules", """
    x = torch.ones(3)
    print(x.is_leaf, x.requires_grad)
    y = x * 2
    print(y.is_leaf, y.requires_grad, y.grad_fn)
    w = torch.ones(3, requires_grad=True)
    z = w * 2
    print(z.is_leaf, z.requires_grad, w.is_leaf)
    show_error(lambda: setattr(z, "requires_grad", False))
    z2 = z.detach()
    z2.requires_grad = True
    print(z2.is_leaf, z2.requires_grad)
    show_error(lambda: torch.tensor([1, 2]).requires_grad_())
    print(torch.tensor([1., 2.]).requires_grad_().requires_grad)
""")
snippet("grad_accumulates", """
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    for _ in range(3):
        (x * x).sum().backward()
        print(x.grad)
    x.grad = None
    (x * 2).sum().backward()
    print(x.grad)
    x.grad.zero_()
    print(x.grad)
""")
snippet("retain_graph_errors", """
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    print(x.grad)
    y = (x * x).sum()
    y.backward()
    show_error(lambda: y.backward())
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    print(x.grad)
    y = x.exp().sum()
    y.backward()
    show_error(lambda: y.backward())
    y = (x * 2).sum()
    y.backward()
    show_error(lambda: y.backward())
""")
snippet("inplace_version_errors", """
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    y = x.exp()
    y.add_(1)
    show_error(lambda: y.sum().backward())
    z = x.clone(); w = z * z; z.mul_(2)
    show_error(lambda: w.sum().backward())
    z = x.clone(); w = z.sin(); z.add_(1)
    show_error(lambda: w.sum().backward())
    w = x.sin()
    with torch.no_grad():
        x.add_(1)
    show_error(lambda: w.sum().backward())
    show_error(lambda: x.add_(1))
    show_error(lambda: x[0].add_(1))
    print(x._version)
    z = x.clone(); z.add_(1); z.mul_(2); print(z._version, z.grad_fn.name())
    z.sum().backward(); print(x.grad)
""")
snippet("inplace_ops", """
    x = torch.tensor([1., -2., 3.], requires_grad=True)
    b = torch.tensor([2., 2., 2.], requires_grad=True)
    a = x.clone(); a.mul_(b); a.sum().backward(); print(x.grad, b.grad)
    c = x.clone(); c += 1; print(c.grad_fn.name()); c.mul_(2); print(c.grad_fn.name())
    c.zero_(); print(c.grad_fn.name(), c._version); c.fill_(2); print(c.grad_fn.name())
    c.clamp_(0, 1); print(c.grad_fn.name()); c.copy_(x); print(c.grad_fn.name())
    c.sub_(x, alpha=2); c.div_(3); print(c)
    x.grad = None
    c.sum().backward(); print(x.grad)
    y = x * 2; v = y[:2]; v.mul_(3)
    print(y.grad_fn.name(), v._base is y)
    x.grad = None
    y.sum().backward(); print(x.grad)
    d = x.clone(); d[0] = 5; print(d.grad_fn.name(), d)
    d[1:] = torch.tensor([7., 8.])
    x.grad = None
    (d * torch.tensor([1., 2., 3.])).sum().backward(); print(x.grad)
    e = torch.zeros(3); e[1] = x[0] * 2; print(e.grad_fn.name(), e.requires_grad)
    x.grad = None
    e.sum().backward(); print(x.grad)
""")
snippet("setitem_accumulate", """
    x = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
    y = x * 1
    y[0] += x[1] * 10
    y[:, 1] *= 2
    y.sum().backward()
    print(y, x.grad)
""")
snippet("hooks", """
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    h = x.register_hook(lambda g: g * 10)
    (x * x).sum().backward()
    print(x.grad)
    h.remove()
    x.grad = None
    (x * x).sum().backward()
    print(x.grad)
    seen = []
    y = x * 2
    y.register_hook(lambda g: seen.append(g.clone()))
    y.register_hook(lambda g: g + 1)
    y.retain_grad()
    z = (y * y).sum()
    x.grad = None
    z.backward()
    print(seen, y.grad, x.grad)
    n = y.grad_fn
    out = []
    x.grad = None
    y = x * 2
    y.grad_fn.register_hook(lambda gi, go: out.append((len(gi), len(go))))
    y.grad_fn.register_prehook(lambda go: (go[0] * 0 + 1,))
    y.sum().backward()
    print(out, x.grad)
    show_error(lambda: torch.ones(2).register_hook(lambda g: g))
""")
snippet("backward_inputs", """
    x = torch.tensor([1., 2.], requires_grad=True)
    w = torch.tensor([3., 4.], requires_grad=True)
    y = (x * w).sum()
    y.backward(inputs=[x])
    print(x.grad, w.grad)
    h = x * w
    y = (h * h).sum()
    y.backward(inputs=[h, w])
    show_warning(lambda: print(h.grad, w.grad, x.grad))
    show_error(lambda: (x * 2).sum().backward(inputs=[]))
""")
snippet("autograd_grad", """
    x = torch.tensor([1., 2.], requires_grad=True)
    w = torch.tensor([3., 4.], requires_grad=True)
    u = torch.tensor([5., 6.], requires_grad=True)
    y = (x * w).sum()
    gx, gw = torch.autograd.grad(y, [x, w], retain_graph=True)
    print(gx, gw, x.grad, gx.requires_grad)
    show_error(lambda: torch.autograd.grad(y, [x, u], retain_graph=True))
    print(torch.autograd.grad(y, [x, u], allow_unused=True, retain_graph=True))
    print(torch.autograd.grad(y, [u], allow_unused=True, materialize_grads=True))
    z = x ** 3
    (g,) = torch.autograd.grad(z.sum(), x, create_graph=True)
    print(g)
    (g2,) = torch.autograd.grad(g.sum(), x)
    print(g2)
    v = x * w
    print(torch.autograd.grad(v, x, grad_outputs=torch.tensor([1., 10.])))
    show_error(lambda: torch.autograd.grad(x * w, x))
    show_error(lambda: torch.autograd.grad((x * 2).sum(), torch.ones(2)))
""")
snippet("higher_order", """
    x = torch.tensor([0.5, 1.5], requires_grad=True)
    y = (x.sin() * x.exp()).sum()
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x, create_graph=True)
    (k,) = torch.autograd.grad(h.sum(), x)
    print(g, h, k)
    y = (x.tanh() ** 2).sum()
    show_warning(lambda: y.backward(create_graph=True))
    print(x.grad)
    g = x.grad
    x.grad = None
    g.sum().backward()
    print(x.grad)
""")
snippet("grad_mode", """
    x = torch.tensor([1.], requires_grad=True)
    with torch.no_grad():
        y = x * 2
    print(y.requires_grad, torch.is_grad_enabled())
    torch.set_grad_enabled(False)
    print(torch.is_grad_enabled(), (x * 2).requires_grad)
    torch.set_grad_enabled(True)
    with torch.inference_mode():
        print((x * 2).requires_grad, torch.is_inference_mode_enabled())
    print(torch.is_inference_mode_enabled())
    @torch.enable_grad()
    def f():
        return (x * 2).requires_grad
    with torch.no_grad():
        print(f())
    @torch.inference_mode()
    def g():
        return torch.is_grad_enabled()
    print(g())
    @torch.no_grad
    def h():
        return torch.is_grad_enabled()
    print(h(), torch.is_grad_enabled())
    import threading
    res = []
    with torch.no_grad():
        t = threading.Thread(target=lambda: res.append(torch.is_grad_enabled()))
        t.start(); t.join()
    print(res)
""")
snippet("reprs", """
    for t in [torch.tensor([2., 3.], requires_grad=True), torch.tensor([12., 96.]),
              torch.tensor(2.),
              torch.tensor([0.1234567, 100.5]), torch.tensor([1e-5, 1.]), torch.tensor([1e9, 1.]),
              torch.tensor([[1., 2.], [3., 4.5]]), torch.tensor([1, 2, 3]),
              torch.tensor([True, False]),
              torch.tensor([]), torch.zeros(0, 3), torch.tensor([1., 2.], dtype=torch.float64),
              torch.tensor([1, 2], dtype=torch.int32), torch.ones(2, 2, 2),
              torch.tensor([float('nan'), float('inf'), -float('inf'), 1.5]), torch.tensor(3),
              torch.arange(2000.), torch.tensor([-1.5, 2.25]), torch.tensor([1e-10]),
              torch.tensor(1e10), torch.tensor([123456.]), torch.tensor([0., 0.]),
              torch.linspace(0, 1, 30), torch.tensor(2., requires_grad=True) * 2,
              torch.arange(24.).reshape(2, 3, 4), torch.arange(3000).reshape(30, 100),
              torch.tensor([[1e-3, 2e5]], dtype=torch.float64), torch.ones(3, 40) / 3]:
        print(repr(t))
    print(torch.ones(2, 3).shape, torch.float32, torch.ones(2).dtype, torch.ones(2).device)
    print(torch.tensor([1.5]).item(), torch.tensor([[1., 2.]]).tolist(), torch.ones(2, 3).size(1))
    print(torch.ones(3, requires_grad=True).sum().grad_fn)
""")
snippet("dtype_promotion", """
    f32 = torch.ones(3)
    f64 = torch.ones(3, dtype=torch.float64)
    i64 = torch.tensor([1, 2, 3])
    print((f32 + torch.tensor(1., dtype=torch.float64)).dtype, (i64 + 1.5).dtype, (i64 / 2).dtype)
    print((i64 + torch.tensor(1.5, dtype=torch.float64)).dtype, (f32 + f64).dtype)
    print((torch.tensor([True]) + 1).dtype, i64.exp().dtype, (f32 > 0).dtype, i64.sum().dtype)
    print(torch.tensor(np.ones(2)).dtype, torch.tensor([1, 2]).dtype, torch.tensor(1.).dtype)
    print((f32 * 2).dtype, (2.5 * i64).dtype, (i64 * i64).dtype, (f32 + i64).dtype)
    print(torch.ones(2, dtype=torch.float64).float().dtype, f32.double().dtype, f32.long().dtype)
""")
snippet("functional_transforms", """
    from torch.autograd.functional import jacobian, hessian, vjp, jvp
    def f(x):
        return x ** 2 * x.sum()
    x = torch.tensor([1., 2., 3.])
    print(jacobian(f, x))
    def g(x, y):
        return (x * y.exp()).sum()
    print(hessian(g, (torch.tensor([1., 2.]), torch.tensor([0.5, -0.5]))))
    print(vjp(f, x, torch.tensor([1., 0., 1.])))
    print(jvp(f, x, torch.tensor([1., 0., 1.])))
    print(hessian(lambda z: (z ** 3).sum(), x))
""")
snippet("custom_function", """
    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            result = i.exp()
            ctx.save_for_backward(result)
            return result
        @staticmethod
        def backward(ctx, grad_output):
            result, = ctx.saved_tensors
            return grad_output * result
    x = torch.tensor([0., 1.], requires_grad=True)
    y = Exp.apply(x)
    print(y, y.grad_fn.name())
    y.sum().backward()
    print(x.grad)
    class MulConst(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, k):
            ctx.k = k
            print(ctx.needs_input_grad)
            return a * k
        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None
    z = MulConst.apply(x, 3.0)
    z.sum().backward()
    print(x.grad)
    y = Exp.apply(x)
    y.sum().backward()
    show_error(lambda: y.sum().backward())
""")
snippet("gradcheck", """
    from torch.autograd import gradcheck
    x = torch.tensor([0.3, -0.7, 1.1], dtype=torch.float64, requires_grad=True)
    print(gradcheck(lambda t: (t.sin() * t).sum(), (x,)))
    print(gradcheck(lambda t: t.softmax(0), (x,)))
""")
snippet("losses", """
    x = torch.tensor([[0.2, -1.0, 3.0], [1.5, 0.5, -0.5]], requires_grad=True)
    t = torch.tensor([[0., 1., 0.], [1., 0., 1.]])
    for fn in [nn.MSELoss(), nn.L1Loss(), nn.BCEWithLogitsLoss(), nn.MSELoss(reduction='sum'),
               nn.BCEWithLogitsLoss(reduction='none')]:
        x.grad = None
        loss = fn(x, t)
        loss.sum().backward()
        print(loss, x.grad)
    x.grad = None
    loss = nn.CrossEntropyLoss()(x, torch.tensor([2, 0]))
    loss.backward()
    print(loss, x.grad)
    x.grad = None
    loss = F.cross_entropy(x, torch.tensor([2, -100]), reduction='sum')
    loss.backward()
    print(loss, x.grad)
    print(F.nll_loss(x.log_softmax(1), torch.tensor([1, 1]), reduction='none'))
    print(F.mse_loss(x, t).grad_fn.name(), F.l1_loss(x, t).grad_fn.name())
""")
snippet("sgd_adam", """
    for make in [lambda p: torch.optim.SGD(p, lr=0.1),
                 lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
                 lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
                 lambda p: torch.optim.Adam(p, lr=0.1),
                 lambda p: torch.optim.Adam(p, lr=0.05, weight_decay=0.1, amsgrad=True)]:
        w = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
        opt = make([w])
        for _ in range(5):
            opt.zero_grad()
            loss = ((w - torch.tensor([0.5, 0.5, 0.5])) ** 2).sum()
            loss.backward()
            opt.step()
        print(w, w.grad)
        opt.zero_grad()
        print(w.grad)
""")
snippet("module_api", """
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2), nn.Tanh(), nn.Sigmoid())
    print(model)
    print([n for n, _ in model.named_parameters()])
    print([tuple(p.shape) for p in model.parameters()])
    print(list(model.state_dict().keys()))
    model.requires_grad_(False)
    print([p.requires_grad for p in model.parameters()])
    model.requires_grad_(True)
    out = model(torch.ones(5, 3)).sum()
    out.backward()
    print([p.grad is not None for p in model.parameters()])
    model.zero_grad()
    print([p.grad for p in model.parameters()])
    sd = {k: v * 0 for k, v in model.state_dict().items()}
    model.load_state_dict(sd)
    print(model(torch.ones(1, 3)))
    show_error(lambda: model.load_state_dict({}))
    print(nn.Dropout(0.25), nn.Linear(2, 3, bias=False))
""")
snippet("matmul_shapes", """
    A = torch.arange(6.).reshape(2, 3).requires_grad_()
    v = torch.tensor([1., -1., 2.], requires_grad=True)
    B = torch.arange(24.).reshape(2, 3, 4).requires_grad_()
    for out in [A @ v, v @ A.t(), A @ B, v @ v, (A @ B[0]), torch.matmul(B.transpose(1, 2), v)]:
        out.sum().backward()
    print(A.grad, v.grad, B.grad)
""")
snippet("indexing_reads", """
    x = torch.arange(12.).reshape(3, 4).requires_grad_()
    parts = [x[0], x[:, 1], x[1:, ::2], x[[0, 2, 2]], x[x > 5], x[..., -1], x[None, 1],
             x[torch.tensor([1, 1])], x[1, [0, 3]]]
    total = sum((p * (i + 1)).sum() for i, p in enumerate(parts))
    total.backward()
    print(x.grad)
    print([list(p.shape) for p in parts])
""")
snippet("reductions", """
    x = torch.tensor([[1., 5., 5.], [2., -1., 0.5]], requires_grad=True)
    outs = [x.max(), x.min(), x.max(1).values, x.max(0)[0], x.amax(1), x.sum((0, 1)), x.mean(1),
            x.prod(), x.prod(1), x.std(), x.var(1), x.std(0, unbiased=False), x.logsumexp(1),
            x.norm(), x.cumsum(1), x.max(dim=1, keepdim=True)[0]]
    for i, o in enumerate(outs):
        x.grad = None
        (o * (i + 1)).sum().backward()
        print(o.grad_fn.name(), x.grad)
    print(x.max(1), x.argmax(), x.argmax(1))
""")

snippet("misuse_messages", """
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    m = torch.ones(2, 3)
    show_error(lambda: (x * 2).backward())
    show_error(lambda: (x * 2).backward(torch.ones(2)))
    show_error(lambda: setattr(x, "grad", torch.ones(2)))
    show_error(lambda: x.item())
    show_error(lambda: m.t().view(6))
    show_error(lambda: bool(x > 0))
    show_error(lambda: torch.ones(2, 3, 4).t())
    show_error(lambda: torch.optim.SGD([x * 2], lr=0.1))
    show_error(lambda: torch.optim.SGD([], lr=0.1))
    show_error(lambda: torch.optim.SGD([x], lr=-1))
    show_error(lambda: torch.optim.Adam([x], betas=(1.5, 0.9)))
    show_error(lambda: nn.Linear(2, 3).missing)
    show_error(lambda: nn.Dropout(1.5))
    show_error(lambda: nn.Module()(1))
    show_error(lambda: F.binary_cross_entropy_with_logits(x, torch.ones(2)))
    show_warning(lambda: F.mse_loss(x, torch.ones(3, 1)))
    show_error(lambda: torch.autograd.grad(x.sum(), x, allow_unused=False, materialize_grads=True))
    show_error(lambda: x.clamp())
    show_error(lambda: len(torch.tensor(1.)))
    show_error(lambda: iter(torch.tensor(1.)))
    show_error(lambda: x.view(2, 2))
    show_error(lambda: x[0:2].detach_())
    show_error(lambda: torch.tensor([1., 2.]).numpy().shape and x.numpy())
    show_error(lambda: x.retain_grad() or torch.ones(1).retain_grad())
    print("done")
""")
snippet("factories_and_methods", """
    print(torch.zeros(2, 3), torch.ones(2), torch.full((2, 2), 1.5), torch.full((2,), 3))
    print(torch.zeros_like(torch.ones(2, dtype=torch.float64)),
          torch.ones_like(torch.tensor([1, 2])))
    print(torch.arange(5), torch.arange(1, 4, 0.5), torch.linspace(0, 1, 5), torch.eye(3))
    print(torch.eye(2, 3), torch.zeros(2, dtype=torch.int64), torch.tensor([[1, 2], [3, 4]]).t())
    x = torch.tensor([[0.5, -1.5, 2.0], [3.0, 0.25, -0.75]], requires_grad=True)
    y = x.detach()
    print(y.flatten(), y.squeeze(), y.unsqueeze(1).shape, y.permute(1, 0), y.reshape(-1, 2))
    print(torch.cat([y, y], 1), torch.stack([y[0], y[1]], 1), y.softmax(0), y.log_softmax(1))
    print(y.clamp(-1, 1), y.abs(), y.sign(), y.floor(), y.ceil(), y.round(), y.exp(), y.sigmoid())
    print(y.relu(), y.tanh(), y.square(), y.pow(3), y ** -1, 2 ** y, y % 0.7, y // 0.7)
    print(y.sum(0), y.mean(1, keepdim=True), y.prod(1), y.max(), y.min(0).values, y.std(1))
    print(y.var(), y.cumsum(1), y.logsumexp(0), y.norm(), y.argmax(1), y.argmin())
    print(y > 0, y == 0.5, (y > 0) & (y < 2), ~(y > 0), y.ne(0.5), y.ge(0.25))
    print(torch.where(y > 0, y, torch.zeros(2, 3)), torch.maximum(y, torch.zeros(1)))
    print(y.matmul(y.t()), y.t().mm(y), y[0].dot(y[1]), y.mv(torch.ones(3)), y.T.shape)
    print(y.transpose(0, 1), y.expand(2, 2, 3).shape, y[0].repeat(2), y.flip(1), y.roll(1, 1))
    print(y.tril(), y.triu(1), y.to(torch.float64), y.int(), y.long(), y.bool(), y.half())
    print(y.numel(), y.dim(), y.size(), y.ndim, y.is_leaf, y.is_floating_point(), y.element_size())
    print(torch.sum(y), torch.exp(y[0]), torch.mean(y, 0), torch.matmul(y, torch.ones(3)))
    print(torch.softmax(y, dim=1), torch.clamp(y, min=0), torch.sqrt(y.abs()), torch.pow(y, 2))
    print(y.new_zeros(2), y.new_ones(1, 2), y.clone(), y.contiguous().shape, y.tolist())
    print(y.masked_fill(y < 0, 0.), y.cpu(), y.to("cpu").device, y.type_as(torch.tensor([1])))
    print(x.float().grad_fn, x.double().grad_fn.name(), x.cpu() is x, x.to(torch.float32) is x)
""")


# ---------------------------------------------------------------------------------------------

_ADDR = re.compile(r" at 0x[0-9a-fA-F]+")
_TRIGGERED = re.compile(r" \(Triggered internally at [^)]*\.\)")


def normalize(text: str) -> str:
    """Make PyTorch's and srcgrad's output comparable: library name and object addresses."""
    text = _ADDR.sub(" at 0xADDR", text)
    text = _TRIGGERED.sub("", text)
    return text.replace("torch::", "srcgrad::").replace("torch.", "srcgrad.")


def run_snippet(name: str, library: str) -> str:
    """Run snippet ``name`` with ``torch`` bound to ``library`` ("torch" or "srcgrad")."""
    if library == "torch":
        import torch
        import torch.autograd.functional  # noqa: F401
        import torch.nn as nn
        import torch.nn.functional as F
    else:
        import srcgrad as torch
        import srcgrad.nn as nn
        import srcgrad.nn.functional as F
    out = io.StringIO()

    def show_error(fn):
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            print(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=out)
        else:
            print("no error", file=out)

    def show_warning(fn):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn()
        for w in caught:
            print(f"{w.category.__name__}: {str(w.message).splitlines()[0]}", file=out)

    env = {"torch": torch, "nn": nn, "F": F, "np": np, "show_error": show_error,
           "show_warning": show_warning, "__name__": "__snippet__"}
    torch.manual_seed(0)
    code = SNIPPETS[name]
    if library == "srcgrad":
        code = code.replace("from torch.", "from srcgrad.")
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"<snippet {name}>", "exec"), env)
    return normalize(out.getvalue())
