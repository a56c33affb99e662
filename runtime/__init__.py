"""srcgrad's runtime: the rule table, the eager Tensor and its engine, nn and optim.

Light by design: it needs NumPy only (never networkx or the code generator).
"""

from srcgrad.runtime import rules as _rules  # noqa: F401  (fills the rule table)
from srcgrad.runtime.eager import ops as _ops  # noqa: F401  (installs Tensor's operations)
from srcgrad.runtime.eager import views as _views  # noqa: F401  (installs views and writes)
