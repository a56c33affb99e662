"""The table of derivative rules, one line a primitive where possible, grouped by family.

Both modes use this table: the eager engine calls a rule on arrays (or on Tensors when
``create_graph=True``), the compiler calls it on symbolic values and prints the result.  So a
rule is plain array code (see :mod:`srcgrad.runtime.rules.primitives` for what it may use).
Constants are Python floats so that float32 gradients stay float32.

Families, in the order they register: ``core`` (helpers and helper primitives),
``elementwise``, ``reductions``, ``linalg``, ``arrays`` (shape, joining, indexing, copies),
``nn`` (fused losses), and ``lists`` (joining a list built at run time; compiler only).
Every name is re-exported here: ``rules.getitem``, ``rules.numel`` …

A primitive owns everything about its operation, the hints the compiler's emitters need
included (attributes of :class:`~srcgrad.runtime.rules.primitives.Primitive`, set next to its rules;
the emitters name no operation):

- ``spelling``: how Python source writes it, when not as a call of its NumPy function:
  ``("operator", "+")`` (``x + y``), ``("operator", "**", "p")`` (``x ** p``, the right
  operand its parameter ``p``), ``("compare", "<")``, ``("unary", "-")``, ``("subscript",
  "index")`` (``x[index]``), ``("method", "astype", "dtype")`` (``x.astype(dtype)``, the
  method's arguments its parameters), ``("sequence", np.stack)`` (the inputs as one list),
  ``("subscripts", np.einsum)`` (its ``subscripts`` parameter first, then the inputs);
- ``full_adjoint``: a linear reduction (sum, mean) over its ``axis``/``keepdims`` parameters,
  whose rule spreads ``g`` (a scalar too) over the input; reducing every axis, the input's
  adjoint is the number ``full_adjoint(g, shape)`` everywhere (``g / numel(shape)``: a mean);
- ``folds_seed``: its rules, run on the number ``1.0`` (the folded seed of ``grad``), give a
  number, not code (every ufunc);
- ``fresh_result``: it returns a new array no other name refers to (added into in place);
- ``accumulate_by``: a helper ``f(total, index, g)`` adding this primitive's result on ``g``
  (``index=index, shape=total.shape``) into ``total`` in place: ``d_x += unindex(g,
  index=i, shape=s)`` is written ``d_x = scatter_add(d_x, i, g)``;
- ``makes_float``: it returns a Python float (shape ``()``, no ``.shape``);
- ``complex_vjp``/``complex_jvp``: its reverse/forward rules hold for complex values (their
  gradients carried as ``dL/da + i dL/db``); any other rule meeting one refuses it
  (``forward_rules.refuse_complex``);
- ``eager_only``: why the compiler refuses it (the default mode runs it on the eager engine);
- ``int_closed``: its result is an integer (or bool) whenever every input is one (not
  ``power``: a Python int to a negative power is a float);
- ``default_kind``: a constructor's result without a ``dtype``: ``"float"`` (``linspace``),
  ``"value"`` (``np.full``: the kind of its value);
- ``shift``: what it does to a value that changes by a shift ``δ`` (``srcgrad.analysis.shift``,
which
  finds that the ``max`` of a logsumexp needs no adjoint): ``"plus"``, ``"minus"``,
  ``"times"``, ``"over"``, ``"negated"``, ``"exponential"``, ``"logarithm"``, ``"choice"``
  (``np.where``); ``"reduce_sum"`` (a sum over ``axis``/``keepdims``: keeps a factor constant
  along the axes), ``"reduce_max"`` (max, min: keeps a factor and commutes with adding
  a constant), ``"reduce_mean"`` (the same, but never tried as the shifted value: ``x -
  mean(x)`` does not keep an ``exp`` from overflowing, and where it overflows the dropped
  adjoint would change which gradient entries are NaN); ``"select"`` (``x[index]``),
  ``"drop_axis"``/``"new_axis"`` (squeeze, expand_dims over ``axis``), ``"rearrange"``
  (each entry of the result is one of the input's: reshape, transpose).

Hints the backends read to compute an operation in a kernel (the primitive of a NumPy function
as code names it: :func:`~srcgrad.runtime.rules.operators.operation`):

- ``operator``: the ``ast`` operator NumPy's arrays compute it for (``ast.Add``: ``x + y`` is
  ``np.add``); :data:`~srcgrad.runtime.rules.operators.OPERATORS` is the table they make;
- ``fused_operator``: written as its operator, a fused region may hold it (``+ - * / **``,
  unary ``-``/``+``, comparisons); a ufunc called by name fuses whatever its operator;
- ``python_raises``: its operator raises on Python numbers where NumPy gives inf or nan;
- ``power_of``: NumPy's ``x ** c`` of an array, ``c`` this constant, is this ufunc
  (``np.sqrt`` for 0.5); ``numerator``: of floats it is ``numerator / x`` (reciprocal);
- ``reduce_from``: what a reduction by it starts from (0; -inf for a maximum, inf for a
  minimum); ``reduces_with``: the ufunc whose ``reduce`` it is (``np.sum``: ``np.add``);
- ``numba``: how a numba kernel writes it, ``(kind, ...)``: ``operator`` (its ``operator``),
  ``logical``/``bitwise`` (an ``ast`` operator, over truth values or over integers),
  ``ternary`` (``np.where``), ``not``, ``builtin`` (a builtin's name), ``exponent``
  (``x ** power_of``), ``quotient``
  (``numerator / x``), ``call`` (``np.<name>(...)``, numba's); ``f64_twin``: a float64
  function of the numba kernels' libm (``<name>_f64``) computes it, ``"fast"`` (vectorised)
  or ``"zeros"`` (numba's own differs in signed zeros: always used); ``numba_arrays``: numba
  compiles it on float64 arrays too, with NumPy's results (the loop kernels);
- ``cuda``: how CUDA C writes it, ``(kind, ...)``: ``call`` (C's function of that name),
  ``predicate``, ``infix``, ``unary``, ``compare`` (C's operator), ``logical``/``bits``
  (over truth values; ``bits`` of bools only), ``helper`` (a device function: its template,
  a comment, and an inline form for a name), ``quotient``, ``ternary``; ``cuda_bool``: the C
  operator it is on bools (NumPy's ``True + True`` is True: ``||``).
"""

from srcgrad.runtime.rules.arrays import *
from srcgrad.runtime.rules.bessel import *
from srcgrad.runtime.rules.constructors import *
from srcgrad.runtime.rules.core import *
from srcgrad.runtime.rules.decompositions import *
from srcgrad.runtime.rules.elementwise import *
from srcgrad.runtime.rules.entropy import *
from srcgrad.runtime.rules.interpolation import *
from srcgrad.runtime.rules.linalg import *
from srcgrad.runtime.rules.lists import *
from srcgrad.runtime.rules.matrices import *
from srcgrad.runtime.rules.nn import *
from srcgrad.runtime.rules.products import *
from srcgrad.runtime.rules.reductions import *
from srcgrad.runtime.rules.scipy_coverage import *
from srcgrad.runtime.rules.scipy_factor import *
from srcgrad.runtime.rules.scipy_linalg import *
from srcgrad.runtime.rules.scipy_lu import *
from srcgrad.runtime.rules.scipy_specs import *
from srcgrad.runtime.rules.scipy_stats import *
from srcgrad.runtime.rules.shapes import *
from srcgrad.runtime.rules.signal import *
from srcgrad.runtime.rules.solvers import *
from srcgrad.runtime.rules.sorting import *
from srcgrad.runtime.rules.special import *
from srcgrad.runtime.rules.special_functions import *
from srcgrad.runtime.rules.spectral import *
from srcgrad.runtime.rules.statistics import *
from srcgrad.runtime.rules.tangents import *
from srcgrad.runtime.rules.triangular import *
