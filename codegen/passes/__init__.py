"""Passes over generated function bodies: dead code, single-use temporaries, hoisting, liveness
and buffer reuse.
"""
