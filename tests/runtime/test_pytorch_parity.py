"""The seed notes' examples and the contract's list of messages, printed by srcgrad exactly as by
PyTorch 2.13.

Each snippet (tests/support/snippets.py) runs with ``torch`` bound to srcgrad; its output must equal
PyTorch 2.13's recorded output, and PyTorch's live output when PyTorch is installed.
"""

import json
import pathlib
import textwrap

import numpy as np
import pytest
from conftest import needs_torch
from snippets import SNIPPETS, run_snippet

DATA = pathlib.Path(__file__).parents[1] / "support" / "data"
RECORDED = json.loads((DATA / "torch_outputs.json").read_text())["outputs"]


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_matches_recorded_pytorch_output(name):
    assert name in RECORDED, "run tests/support/record_torch.py to record PyTorch's output"
    assert run_snippet(name, "srcgrad") == RECORDED[name]


@needs_torch
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_record_is_current_with_live_pytorch(name):
    assert run_snippet(name, "torch") == RECORDED[name]


# ------------------------------------------------------------------------------------------
# Printing and failing as PyTorch does: each prints what PyTorch 2.13 prints, compared with
# live PyTorch.

PRINTED_AS_PYTORCH = {
    "all_any": """
        a = torch.tensor([1., 2.], requires_grad=True)
        (a ** 3).sum().backward()
        print((a.grad == 3 * a ** 2).all(), (a.grad > 5).any(), (a.grad > 5).all(0))
    """,
    "grad_accumulates_in_place": """
        x = torch.tensor([1., 2.], requires_grad=True)
        (x * x).sum().backward()
        g = x.grad
        (x * 3).sum().backward()
        print(g, g is x.grad, x.grad._version > 0)
    """,
    "zero_grad_keeps_the_object": """
        w = torch.nn.Parameter(torch.tensor([1., 2.]))
        opt = torch.optim.SGD([w], lr=0.1)
        (w * w).sum().backward()
        g = w.grad
        opt.zero_grad(set_to_none=False)
        print(g is w.grad, w.grad)
        (w * 3).sum().backward()
        print(g, g is w.grad)
        opt.zero_grad()
        print(w.grad)
    """,
    "custom_function_node": """
        class Cube(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3
            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return g * 3 * x ** 2
        x = torch.tensor([1., 2.], requires_grad=True)
        y = Cube.apply(x)
        print(type(y.grad_fn).__name__, y.grad_fn.name(), y)
        print(y.grad_fn.next_functions[0][0].name(), type(y.grad_fn.next_functions[0][0]).__name__)
        y.sum().backward()
        print(x.grad)
    """,
    "accumulate_grad_name": """
        x = torch.tensor([1., 2.], requires_grad=True)
        y = x * 2
        print(y.grad_fn.next_functions[0][0].name(), y.grad_fn.next_functions)
    """,
    "requires_grad_messages": """
        x = torch.tensor([1., 2.], requires_grad=True)
        y = x * 2
        def set_true(): y.requires_grad = True
        def set_false(): y.requires_grad = False
        def set_int(): torch.tensor([1, 2]).requires_grad = True
        show_error(set_true)
        show_error(lambda: y.requires_grad_(True))
        show_error(set_false)
        show_error(lambda: y.requires_grad_(False))
        show_error(set_int)
        show_error(lambda: torch.tensor([1, 2]).requires_grad_())
        show_error(lambda: torch.tensor([1, 2], requires_grad=True))
    """,
    "inplace_on_view_of_leaf": """
        x = torch.tensor([1., 2., 3.], requires_grad=True)
        show_error(lambda: x[0:2].add_(1))
        show_error(lambda: x.view(3).mul_(2))
        show_error(lambda: x.add_(1))
        def write(): x[0] = 5.
        show_error(write)
    """,
    "silent_inf": """
        x = torch.tensor([0., 1., 4.], requires_grad=True)
        show_warning(lambda: print(x.sqrt(), torch.tensor([0., -1.]).log(), 1 / torch.tensor(0.)))
        show_warning(lambda: x.sqrt().sum().backward())
        print(x.grad)
    """,
    "create_graph_node_names": """
        x = torch.tensor([0.5, 1.5], requires_grad=True)
        for f in (torch.tanh, torch.sigmoid, torch.relu, torch.exp, torch.sin):
            (g,) = torch.autograd.grad(f(x).sum(), x, create_graph=True)
            fn = g.grad_fn
            print(type(fn).__name__, [(n.name() if n else None, i) for n, i in fn.next_functions])
        (g,) = torch.autograd.grad(x.softmax(0)[0], x, create_graph=True)
        print(type(g.grad_fn).__name__)
        x = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
        y = (x.tanh() ** 2).sum()
        (g,) = torch.autograd.grad(y, x, create_graph=True)
        (h,) = torch.autograd.grad(g.sum(), x, create_graph=True)
        (k,) = torch.autograd.grad(h.sum(), x)
        print(g, h, k)
    """,
    "format_0d": """
        x = torch.tensor([1., 2.], requires_grad=True)
        loss = (x * x).sum()
        print(f"{loss}", f"{loss:.3f}", "{}".format(torch.tensor(3)), f"{torch.tensor(2.5)}")
        print(f"{x}")
        show_error(lambda: f"{x:.2f}")
    """,
}


@needs_torch
@pytest.mark.parametrize("name", sorted(PRINTED_AS_PYTORCH))
def test_these_examples_print_what_pytorch_prints(name):
    SNIPPETS[f"printed_{name}"] = textwrap.dedent(PRINTED_AS_PYTORCH[name]).strip() + "\n"
    try:
        assert run_snippet(f"printed_{name}", "srcgrad") == run_snippet(f"printed_{name}", "torch")
    finally:
        del SNIPPETS[f"printed_{name}"]


ANOMALY = """
    x = torch.tensor([0., 1.], requires_grad=True)
    def run():
        with torch.autograd.detect_anomaly():
            y = x.sqrt()
            (y * 0).sum().backward()
    def guarded():
        show_error(run)
    show_warning(guarded)
    print(torch.is_anomaly_enabled())
    with torch.autograd.set_detect_anomaly(True):
        print(torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
    with torch.autograd.detect_anomaly(check_nan=False):
        show_error(lambda: (x.sqrt() * 0).sum().backward())
    print(torch.is_anomaly_enabled())
"""


@needs_torch
def test_detect_anomaly_names_the_forward_call_that_made_the_nan():
    SNIPPETS["anomaly"] = textwrap.dedent(ANOMALY).strip() + "\n"
    try:
        got, want = run_snippet("anomaly", "srcgrad"), run_snippet("anomaly", "torch")
    finally:
        del SNIPPETS["anomaly"]
    assert "Error detected in SqrtBackward0" in want and "returned nan values" in want
    assert got == want


@needs_torch
@pytest.mark.parametrize("data", [[0.3], 0.1, [[0.1, 2.0], [1e-8, 3.3]], [1, 2]])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_tensor_of_python_data_converts_straight_to_the_dtype_given(data, dtype):
    """``tensor([0.3], dtype=float64)`` holds 0.3 exactly, as in PyTorch: the data is not
    first rounded through the default float32."""
    import torch

    import srcgrad
    got = srcgrad.tensor(data, dtype=getattr(srcgrad, dtype)).numpy()
    want = torch.tensor(data, dtype=getattr(torch, dtype)).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
