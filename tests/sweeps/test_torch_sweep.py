"""Differential sweep: every public ``torch.Tensor`` name is either offered by srcgrad and
behaves as PyTorch 2.13 on sample calls, or is listed as not offered and absent.

Each case of ``torch_surface`` runs on PyTorch and on srcgrad in float32 and float64, on a
plain tensor, a leaf that requires grad and a non-leaf; values, dtypes, shapes, ``grad_fn`` and
``next_functions``, errors, warnings and the leaves' ``.grad`` after backward must agree.
"""

from __future__ import annotations

import inspect

import pytest
from conftest import needs_torch
from torch_surface import CASES
from torch_surface_functions import (
    FUNCTION_CASES,
    REFUSED,
    STRUCTURE_DIFFERS,
    TESTED_ELSEWHERE,
)
from torch_sweep_runner import DTYPES, MODES, differences, run, values_only

import srcgrad
from srcgrad.runtime.eager.not_offered import NOT_OFFERED

pytestmark = needs_torch


def _torch():
    import torch
    import torch.autograd.functional  # noqa: F401
    import torch.nn.functional  # noqa: F401
    return torch


def _public_tensor_names() -> set[str]:
    return {n for n in dir(_torch().Tensor) if not n.startswith("_")}


def _sweep(cases: list) -> list[str]:
    torch = _torch()
    found = []
    for k, (name, label, call, spec) in enumerate(cases):
        for dtype in DTYPES:
            for mode in MODES:
                srcgrad.manual_seed(0)
                torch.manual_seed(0)
                want = run(torch, call, spec, dtype, mode, k)
                got = run(srcgrad, call, spec, dtype, mode, k)
                if (name, label) in STRUCTURE_DIFFERS:
                    want, got = values_only(want), values_only(got)
                diff = differences(want, got)
                if diff:
                    found.append(f"{name} [{label}] {dtype} {mode}: " + "; ".join(diff[:3]))
    return found


def _report(found: list[str], covered: int) -> str:
    head = f"{len(found)} differences from PyTorch over {covered} names:\n"
    return head + "\n".join(found[:60])


def test_every_public_tensor_name_is_swept_or_not_offered():
    names = _public_tensor_names()
    swept = {c[0] for c in CASES} | set(TESTED_ELSEWHERE)
    listed = set(NOT_OFFERED)
    assert not (swept & listed), f"both swept and not offered: {sorted(swept & listed)}"
    missing = sorted(names - swept - listed)
    assert not missing, f"neither swept nor listed as not offered: {missing}"
    print(f"\ntorch.Tensor: {len(names & swept)} names swept, {len(names & listed)} not offered")


def test_names_not_offered_raise_attribute_error_with_a_clear_message():
    t = srcgrad.tensor([1.0, 2.0], requires_grad=True)
    for name in NOT_OFFERED:
        assert not hasattr(srcgrad.Tensor, name), name
        with pytest.raises(AttributeError, match=f"does not offer torch.Tensor.{name}"):
            getattr(t, name)
    with pytest.raises(AttributeError, match="no attribute 'not_a_torch_name'"):
        t.not_a_torch_name  # noqa: B018


def test_offered_tensor_names_exist():
    missing = sorted({c[0] for c in CASES if not c[0].startswith("_")
                      and not hasattr(srcgrad.Tensor, c[0])})
    assert not missing, f"swept but not offered: {missing}"


def test_tensor_surface_matches_pytorch():
    found = _sweep(CASES)
    names = {c[0] for c in CASES}
    print(f"\nswept {len(names)} Tensor names in {len(CASES)} cases x {len(DTYPES) * len(MODES)}")
    assert not found, _report(found, len(names))


def _shared_functions() -> set[str]:
    """Functions srcgrad offers under a name torch, torch.nn.functional or autograd also has."""
    torch = _torch()
    out = set()
    for mine, theirs, prefix in ((srcgrad, torch, ""),
                                 (srcgrad.nn.functional, torch.nn.functional, "F."),
                                 (srcgrad.autograd, torch.autograd, ""),
                                 (srcgrad.autograd.functional, torch.autograd.functional, "")):
        for n in dir(mine):
            obj = getattr(mine, n)
            if (n.startswith("_") or not hasattr(theirs, n) or inspect.isclass(obj)
                    or inspect.ismodule(obj) or not callable(obj)):
                continue
            out.add(prefix + n)
    return out


def test_every_shared_function_is_swept():
    swept = {c[0] for c in FUNCTION_CASES} | set(TESTED_ELSEWHERE)
    missing = sorted(_shared_functions() - swept)
    assert not missing, f"functions offered but not swept: {missing}"


def test_functions_match_pytorch():
    shared = _shared_functions()
    cases = [c for c in FUNCTION_CASES if c[0] in shared]
    found = _sweep(cases)
    print(f"\nswept {len({c[0] for c in cases})} functions in {len(cases)} cases")
    assert not found, _report(found, len({c[0] for c in cases}))


@pytest.mark.parametrize("name,label,call,spec", [c[:4] for c in REFUSED],
                         ids=[f"{c[0]}-{c[1]}" for c in REFUSED])
def test_calls_srcgrad_refuses_raise_rather_than_differ(name, label, call, spec):
    for dtype in DTYPES:
        for mode in MODES:
            got = run(srcgrad, call, spec, dtype, mode, 0)
            assert got["result"][0] == "error", (name, label, dtype, mode)

