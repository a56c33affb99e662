"""``scipy.signal.convolve(in1, in2, mode)``: the N-d convolution, in every mode; and
``correlate``, ``convolve2d`` and ``correlate2d`` (with ``boundary='fill'``, ``fillvalue=0``).

Its 'same' and 'valid' results are windows of the 'full' one (at ``(n2 - 1) // 2`` and at
``min(n1, n2) - 1`` along each axis: SciPy's centring), so a gradient is first placed into the
'full' shape with zeros around it; the 'full' convolution's gradient for one operand is then
the 'valid' convolution of that with the other operand reversed along every axis.  A
correlation is the convolution with ``in2`` reversed; ``correlate2d``'s 'same' window starts
at ``n2 // 2``, not at ``(n2 - 1) // 2``.
"""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.primitives import defjvp, defvjp, helper, primitive
from srcgrad.runtime.rules.scipy_specs import Spec

__all__ = ["signal_convolve", "signal_correlation", "CONVOLVE_MODES", "CORRELATIONS",
           "SIGNAL_SPECS"]

CONVOLVE_MODES = ("full", "same", "valid")


@primitive(nin=2, dtype_rule="float")
def signal_convolve(in1, in2, *, mode="full", method="auto"):
    """``scipy.signal.convolve(in1, in2, mode, method)``."""
    from scipy import signal
    return signal.convolve(in1, in2, mode=mode, method=method)


@helper
def _full_widths(gshape, s1, s2, mode, centre=False):
    """np.pad widths that put the gradient of a 'same' or 'valid' result into the 'full'
    result's shape (``centre``: the 'same' window of ``correlate2d``)."""
    widths = []
    for n, n1, n2 in zip(gshape, s1, s2):
        start = (n2 // 2 if centre else (n2 - 1) // 2) if mode == "same" else min(n1, n2) - 1
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


CORRELATIONS = ("correlate", "convolve2d", "correlate2d")
"""The other functions of :func:`signal_correlation` (``fn``)."""


@primitive(nin=2, dtype_rule="float")
def signal_correlation(in1, in2, *, fn, mode="full", method="auto"):
    """``scipy.signal.<fn>(in1, in2, mode)`` (``method`` for ``correlate`` only)."""
    from scipy import signal
    if fn == "correlate":
        return signal.correlate(in1, in2, mode=mode, method=method)
    return getattr(signal, fn)(in1, in2, mode=mode)


def _kernel(in2, fn):
    """What ``in1`` is convolved with."""
    return in2 if fn == "convolve2d" else np.flip(in2)


def _correlation_rule(which: int):
    def rule(g, ans, in1, in2, fn, mode="full", method="auto"):
        if mode != "full":
            g = np.pad(g, _full_widths(g.shape, in1.shape, in2.shape, mode,
                                       fn == "correlate2d"))
        if which == 0:
            return signal_convolve(g, np.flip(_kernel(in2, fn)), mode="valid")
        return _kernel(signal_convolve(g, np.flip(in1), mode="valid"), fn)
    return rule


defvjp(signal_correlation, _correlation_rule(0), _correlation_rule(1))
defjvp(signal_correlation, multilinear=True)


def _mode_refusal(name, st):
    if st["mode"] not in CONVOLVE_MODES:
        return f"{name}() is followed by srcgrad with mode one of {', '.join(CONVOLVE_MODES)}"
    return None


def _correlate(st):
    refusal = _mode_refusal("scipy.signal.correlate", st)
    if refusal is None and st["method"] not in ("auto", "direct", "fft"):
        refusal = "scipy.signal.correlate() is followed with method 'auto', 'direct' or 'fft'"
    return refusal or (signal_correlation, {"fn": "correlate", "mode": st["mode"],
                                            "method": st["method"]})


def _two_d(fn):
    name = f"scipy.signal.{fn}"

    def choose(st):
        refusal = _mode_refusal(name, st)
        fill = st["fillvalue"]
        if refusal is None and (st["boundary"] != "fill" or isinstance(fill, bool) or
                                not isinstance(fill, (int, float)) or fill != 0):
            refusal = (f"{name}() is followed by srcgrad with boundary='fill' and fillvalue=0 "
                       "only")
        return refusal or (signal_correlation, {"fn": fn, "mode": st["mode"]})
    return choose


SIGNAL_SPECS = {"correlate": Spec("scipy.signal.correlate", ("in1", "in2"), _correlate,
                                  (signal_correlation,)),
                "convolve2d": Spec("scipy.signal.convolve2d", ("in1", "in2"),
                                   _two_d("convolve2d"), (signal_correlation,)),
                "correlate2d": Spec("scipy.signal.correlate2d", ("in1", "in2"),
                                    _two_d("correlate2d"), (signal_correlation,))}
"""``scipy.signal`` names → how srcgrad follows them (``convolve``: its own lowering)."""
