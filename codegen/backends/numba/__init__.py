"""``backend="numba"``: fused regions and whole loops as ``@njit`` kernels.
"""
