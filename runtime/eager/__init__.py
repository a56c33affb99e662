"""The eager engine: ``Tensor``, its operations and the backward graph, as PyTorch's autograd.

``Tensor`` (:mod:`~srcgrad.runtime.eager.tensor`) holds the data and the autograd state, and
runs every operation through ``apply``.  Its operations come in groups, one module each, and
importing this package installs them on the class, in this order (a later group may build on an
earlier one):

1. ``ops``: operators, elementwise functions, reductions, ``matmul``;
2. ``views``: views, indexing, writes in place, moves between dtypes and devices;
3. ``conversions``: to NumPy, Python numbers and text, and NumPy's dispatch to Tensors;
4. ``methods``: logic, comparisons, more reductions, metadata, the in-place forms;
5. ``selection``: narrow, split, gather, sort, topk and the like.
"""

from srcgrad.runtime.eager import ops, views, conversions, methods, selection  # noqa: F401, I001
