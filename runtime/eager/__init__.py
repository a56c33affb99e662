"""The eager engine: ``Tensor``, its operations and the backward graph, as PyTorch's autograd.
"""
