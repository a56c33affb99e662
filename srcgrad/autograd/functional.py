"""``srcgrad.autograd.functional``: jacobian, hessian, vjp, jvp, hvp, vhp."""

from srcgrad.runtime.eager.functional import hessian, hvp, jacobian, jvp, vhp, vjp

__all__ = ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"]
