"""Analyses of the lowered IR: the dataflow graph and activity, shift invariance, and whether a
function's code may be specialised for shapes or Python floats.
"""
