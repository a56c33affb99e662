"""srcgrad's runtime: the rule table, the eager Tensor and its engine, nn and optim.

Light by design: it needs NumPy only (never networkx or the code generator).
"""

from srcgrad.runtime import eager as _eager  # noqa: F401  (Tensor and its operations)
from srcgrad.runtime import rules as _rules  # noqa: F401  (fills the rule table)
