"""Every primitive whose NumPy result may share memory with an input is declared a view in
``srcgrad.frontend.aliases.VIEW_FUNCTIONS``, so that a write through its result is followed or
refused.
Enumerated over the rule table's samples: a new view-returning rule fails here until declared.
"""

from __future__ import annotations

import numpy as np
import pytest
from rule_samples import SAMPLES

from srcgrad.frontend.aliases import VIEW_FUNCTIONS
from srcgrad.runtime.rules.primitives import PRIMITIVES


def _arrays(value):
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in _arrays(v)]
    return []


@pytest.mark.parametrize("name", sorted(n for n in PRIMITIVES if n in SAMPLES))
def test_a_result_that_shares_memory_is_a_declared_view(name):
    inputs, params = SAMPLES[name]
    inputs = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in inputs]
    out = PRIMITIVES[name].fn(*inputs, **params)
    shares = any(np.shares_memory(o, a) for o in _arrays(out) for a in _arrays(inputs))
    assert not shares or name in VIEW_FUNCTIONS, (
        f"{name}'s result shares memory with an input: add it to VIEW_FUNCTIONS")
