"""Fusion: the regions of a shape-specialised function that one kernel each can run.
"""
