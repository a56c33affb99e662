"""The table of derivative rules, one line a primitive where possible, grouped by family.

Both modes use this table: the eager engine calls a rule on arrays (or on Tensors when
``create_graph=True``), the compiler calls it on symbolic values and prints the result.  So a
rule is plain array code (see :mod:`srcgrad.runtime.primitives` for what it may use).
Constants are Python floats so that float32 gradients stay float32.

Families, in the order they register: ``core`` (helpers and helper primitives),
``elementwise``, ``reductions``, ``linalg``, ``arrays`` (shape, joining, indexing, copies),
``nn`` (fused losses), and ``lists`` (joining a list built at run time; compiler only).
Every name is re-exported here: ``rules.getitem``, ``rules.numel`` …
"""

from srcgrad.runtime.rules.arrays import *
from srcgrad.runtime.rules.bessel import *
from srcgrad.runtime.rules.constructors import *
from srcgrad.runtime.rules.core import *
from srcgrad.runtime.rules.decompositions import *
from srcgrad.runtime.rules.elementwise import *
from srcgrad.runtime.rules.linalg import *
from srcgrad.runtime.rules.lists import *
from srcgrad.runtime.rules.matrices import *
from srcgrad.runtime.rules.nn import *
from srcgrad.runtime.rules.products import *
from srcgrad.runtime.rules.reductions import *
from srcgrad.runtime.rules.scipy_stats import *
from srcgrad.runtime.rules.shapes import *
from srcgrad.runtime.rules.signal import *
from srcgrad.runtime.rules.solvers import *
from srcgrad.runtime.rules.sorting import *
from srcgrad.runtime.rules.special import *
from srcgrad.runtime.rules.special_functions import *
from srcgrad.runtime.rules.statistics import *
from srcgrad.runtime.rules.tangents import *
