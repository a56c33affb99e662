"""The seed notes' examples and SPEC §5, printed by srcgrad exactly as by PyTorch 2.13.

Each snippet (tests/snippets.py) runs with ``torch`` bound to srcgrad; its output must equal
PyTorch 2.13's recorded output, and PyTorch's live output when PyTorch is installed.
"""

import json
import pathlib

import pytest
from conftest import needs_torch
from snippets import SNIPPETS, run_snippet

RECORDED = json.loads((pathlib.Path(__file__).parent / "data" / "torch_outputs.json")
                      .read_text())["outputs"]


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_matches_recorded_pytorch_output(name):
    assert name in RECORDED, "run tests/record_torch.py to record PyTorch's output"
    assert run_snippet(name, "srcgrad") == RECORDED[name]


@needs_torch
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_record_is_current_with_live_pytorch(name):
    assert run_snippet(name, "torch") == RECORDED[name]
