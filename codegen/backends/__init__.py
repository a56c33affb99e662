"""Backends: the array library generated code calls (NumPy, numba, CuPy, Dask) and what each
adds to a module, such as fused kernels.
"""
