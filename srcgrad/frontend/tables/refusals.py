"""Why the compiler refuses the NumPy names that no table covers, grouped by reason.

:mod:`srcgrad.frontend.tables.surface` classifies NumPy's public surface from the rule table and
the compiler's tables; this module only lists the rest.  A name here that a table now covers is
stale, and ``tests/structure/test_surface.py`` says to remove it; a name absent from the
installed NumPy (older or newer) is ignored.
"""

from __future__ import annotations

__all__ = ["REFUSED", "REFUSED_NAMESPACES"]


def _refuse(reason: str, names: str) -> dict[str, str]:
    return dict.fromkeys(names.split(), reason)


REFUSED_NAMESPACES = {"np.fft": "no rule yet (hfft and ihfft: complex numbers; the transforms "
                                "with rules run on the eager engine)"}
"""Whole namespaces refused for one reason (names a table covers are classified by it)."""

REFUSED: dict[str, str] = {
    **_refuse("no derivative rule yet", """
        np.nancumprod np.nanmedian np.nanpercentile np.nanquantile np.unstack np.block
        np.ediff1d np.matvec np.vecmat np.cumulative_prod np.cumulative_sum np.copysign
        np.float_power np.ldexp np.frexp np.modf np.divmod np.i0
        np.unwrap np.choose np.compress np.extract np.delete np.insert np.resize
        np.trim_zeros np.broadcast_arrays np.astype np.asanyarray np.asarray_chkfinite
        np.ascontiguousarray np.asfortranarray np.require np.poly np.polyadd np.polysub
        np.polymul np.polydiv np.polyder np.polyint np.polyfit np.roots np.unique np.unique_all
        np.unique_counts np.unique_inverse np.unique_values np.union1d np.intersect1d
        np.setdiff1d np.setxor1d np.histogram np.histogram2d np.histogramdd
        np.histogram_bin_edges np.geomspace np.spacing np.nextafter np.linalg.cond
        np.linalg.tensorinv np.linalg.tensorsolve ndarray.choose ndarray.compress"""),
    **_refuse("its second argument carries a value at zero (no rule yet)", "np.heaviside"),
    **_refuse("integer or boolean result, not on the no-gradient list yet", """
        np.array_equal np.array_equiv np.isin np.bincount np.ix_ np.bitwise_and np.bitwise_or
        np.bitwise_xor np.bitwise_not np.bitwise_invert np.invert np.bitwise_left_shift
        np.bitwise_right_shift np.left_shift np.right_shift np.bitwise_count np.gcd np.lcm
        np.packbits np.unpackbits np.linalg.matrix_rank np.bartlett np.blackman np.hamming
        np.hanning np.kaiser"""),
    **_refuse("a question about types or memory, not on the no-gradient list yet", """
        np.iterable np.isfortran np.may_share_memory np.shares_memory np.broadcast_shapes
        np.common_type np.min_scalar_type np.isdtype"""),
    **_refuse("returns values taken from an array argument (no rule yet)", """
        np.random.permutation np.random.choice"""),
    **_refuse("converts to Python lists", "ndarray.tolist"),
    **_refuse("writes in place", """
        np.copyto np.put np.put_along_axis np.place np.putmask np.fill_diagonal
        np.random.shuffle ndarray.fill ndarray.put ndarray.resize ndarray.setfield
        ndarray.setflags ndarray.sort ndarray.partition ndarray.byteswap"""),
    **_refuse("an array or scalar type (converting through it is not modelled)", """
        np.ndarray np.generic np.number np.integer np.signedinteger np.unsignedinteger
        np.inexact np.floating np.longlong np.ulonglong np.object_ np.matrix np.asmatrix np.bmat
        np.recarray np.record np.poly1d np.ufunc"""),
    **_refuse("reinterprets or exchanges memory", """
        np.from_dlpack ndarray.view ndarray.getfield ndarray.to_device"""),
    **_refuse("iterates in Python (an iterator or per-element Python calls)", """
        np.nditer np.nested_iters np.ndenumerate np.ndindex np.flatiter np.broadcast
        np.vectorize np.frompyfunc np.fromfunction np.fromiter np.apply_along_axis
        np.apply_over_axes np.piecewise"""),
    **_refuse("complex numbers (a later issue)", """
        np.iscomplex np.iscomplexobj np.isreal np.isrealobj np.sort_complex np.complex64
        np.csingle np.complex128 np.cdouble np.complex256 np.clongdouble np.complexfloating
        np.linalg.eig np.linalg.eigvals ndarray.conj ndarray.conjugate"""),
    **_refuse("configuration, printing or errors, not array math", """
        np.errstate np.seterr np.geterr np.seterrcall np.geterrcall np.setbufsize np.getbufsize
        np.printoptions np.set_printoptions np.get_printoptions np.info np.get_include
        np.show_config np.show_runtime np.einsum_path np.linalg.LinAlgError"""),
    **_refuse("file I/O", """
        np.load np.save np.savez np.savez_compressed np.loadtxt np.savetxt np.genfromtxt
        np.fromfile np.fromregex np.memmap ndarray.tofile ndarray.dump ndarray.dumps"""),
    **_refuse("string/bytes data", """
        np.array2string np.array_repr np.array_str np.base_repr np.binary_repr
        np.format_float_positional np.format_float_scientific np.frombuffer np.fromstring
        np.str_ np.bytes_ np.character np.flexible np.void np.typename np.mintypecode
        ndarray.tobytes"""),
    **_refuse("datetime", """
        np.datetime64 np.timedelta64 np.datetime_as_string np.datetime_data np.busday_count
        np.busday_offset np.busdaycalendar np.is_busday np.isnat"""),
    **_refuse("deprecated, or removed in NumPy 2", """
        np.trapz np.in1d np.alltrue np.sometrue np.product np.cumproduct np.round_
        np.msort np.asfarray np.mat np.float_ np.cfloat np.complex_ np.clongfloat np.longcomplex
        np.longfloat np.singlecomplex np.string_ np.unicode_ np.fastCopyAndTranspose np.who
        np.find_common_type np.issctype np.issubclass_ np.issubsctype np.maximum_sctype
        np.obj2sctype np.sctype2char np.set_numeric_ops np.set_string_function np.seterrobj
        np.geterrobj np.get_array_wrap np.byte_bounds np.compare_chararrays np.chararray
        np.format_parser np.recfromcsv np.recfromtxt np.safe_eval np.deprecate
        np.deprecate_with_doc np.disp np.lookfor np.source np.add_docstring np.add_newdoc
        np.add_newdoc_ufunc np.DataSource np.RankWarning ndarray.itemset ndarray.newbyteorder
        ndarray.ptp ndarray.tostring"""),
}
"""Every name no table covers → why the compiler refuses it, grouped by reason."""
