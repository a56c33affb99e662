"""``backend="dask"``: Dask arrays in place of NumPy's.
"""
