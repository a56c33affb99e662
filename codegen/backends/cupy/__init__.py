"""``backend="cupy"``: fused regions as CUDA kernels.
"""
