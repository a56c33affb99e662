"""``scipy.signal.convolve(in1, in2, mode)``: the N-d convolution, in every mode.

Its 'same' and 'valid' results are windows of the 'full' one (at ``(n2 - 1) // 2`` and at
``min(n1, n2) - 1`` along each axis: SciPy's centring), so a gradient is first placed into the
'full' shape with zeros around it; the 'full' convolution's gradient for one operand is then
the 'valid' convolution of that with the other operand reversed along every axis.
"""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.primitives import defjvp, defvjp, helper, primitive

__all__ = ["signal_convolve", "CONVOLVE_MODES"]

CONVOLVE_MODES = ("full", "same", "valid")


@primitive(nin=2, dtype_rule="float")
def signal_convolve(in1, in2, *, mode="full", method="auto"):
    """``scipy.signal.convolve(in1, in2, mode, method)``."""
    from scipy import signal
    return signal.convolve(in1, in2, mode=mode, method=method)


@helper
def _full_widths(gshape, s1, s2, mode):
    """np.pad widths that put the gradient of a 'same' or 'valid' result into the 'full'
    result's shape."""
    widths = []
    for n, n1, n2 in zip(gshape, s1, s2):
        start = (n2 - 1) // 2 if mode == "same" else min(n1, n2) - 1
        widths.append((start, n1 + n2 - 1 - start - n))
    return tuple(widths)


def _operand_rule(which: int):
    def rule(g, ans, in1, in2, mode="full", method="auto"):
        if mode != "full":
            g = np.pad(g, _full_widths(g.shape, in1.shape, in2.shape, mode))
        return signal_convolve(g, np.flip(in2 if which == 0 else in1), mode="valid")
    return rule


defvjp(signal_convolve, _operand_rule(0), _operand_rule(1))
defjvp(signal_convolve, multilinear=True)
