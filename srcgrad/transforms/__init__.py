"""The transforms users call (``grad``, ``jvp``, ``jacrev``, ``hessian``, ``compile`` ...), their
specialisations, the safety net and the eager fallback.
"""
