"""``srcgrad.viz``: pictures of both graphs, the eager backward graph (``make_dot``) and a
compiled function's dataflow graph (``draw``); see :mod:`srcgrad.tools.viz`."""

from srcgrad.tools.viz import MissingRenderer, Picture, draw, make_dot

__all__ = ["Picture", "MissingRenderer", "make_dot", "draw"]
