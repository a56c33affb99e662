"""Public names of ``torch.Tensor`` that srcgrad does not offer (PyTorch 2.13).

``srcgrad.Tensor`` raises AttributeError for each, saying so, rather than guessing at a
meaning: sparse, quantized and complex tensors, storage and stride manipulation, random
in-place fills, and operations without a rule in the rule table.
``tests/sweeps/test_torch_sweep.py`` fails when a public name of ``torch.Tensor`` is neither here
nor compared against PyTorch.
"""

NOT_OFFERED = frozenset("""
    addbmm addbmm_ addcdiv addcdiv_ addcmul addcmul_ addmm addmm_ addmv addmv_ addr addr_
    aminmax angle apply_ as_strided as_strided_ as_strided_scatter as_subclass baddbmm baddbmm_
    bernoulli bernoulli_ bfloat16 bincount bitwise_and_ bitwise_left_shift bitwise_left_shift_
    bitwise_not_ bitwise_or_ bitwise_right_shift bitwise_right_shift_ bitwise_xor_ bmm byte
    cauchy_ ccol_indices cdouble cfloat chalf char cholesky cholesky_inverse cholesky_solve
    coalesce col_indices conj conj_physical conj_physical_ const_data_ptr copysign copysign_
    corrcoef cov cross crow_indices cummax cummin data_ptr dense_dim dequantize diag_embed
    diagflat diagonal_scatter diff dim_order dist dsplit eig eq_ erfinv erfinv_ exponential_
    fill_diagonal_ float_power_ floor_divide_ frac frac_ frexp gcd gcd_ ge_ geometric_ geqrf
    grad_dtype greater_ greater_equal_ gt_ hardshrink hash_tensor heaviside heaviside_ histc
    histogram hsplit i0 i0_ igamma igamma_ igammac igammac_ imag index index_add index_add_
    index_copy index_copy_ index_fill index_fill_ index_put index_put_ index_reduce
    index_reduce_ indices inner int_repr ipu is_coalesced is_distributed is_ipu is_maia
    is_mkldnn is_mps is_mtia is_nested is_pinned is_set_to is_shared is_sparse_csr is_vulkan
    is_xla is_xpu istft kron kthvalue layout lcm lcm_ ldexp ldexp_ le_ lerp lerp_ less_
    less_equal_ log_normal_ logcumsumexp logdet logical_and_ logical_not_ logical_or_
    logical_xor_ lstsq lt_ lu lu_solve map2_ map_ masked_scatter masked_scatter_ matrix_exp
    matrix_power median mode module_load msort mtia multinomial mvlgamma mvlgamma_ name nanmean
    nanmedian nanquantile narrow_copy ne_ new new_empty_strided nextafter nextafter_
    nonzero_static normal_ not_equal_ orgqr ormqr pin_memory pinverse polygamma polygamma_
    prelu put put_ q_per_channel_axis q_per_channel_scales q_per_channel_zero_points q_scale
    q_zero_point qr qscheme quantile random_ real record_stream
    register_post_accumulate_grad_hook reinforce renorm renorm_ repeat_interleave resize
    resize_ resize_as resize_as_ resize_as_sparse_ resolve_conj resolve_neg row_indices scatter
    scatter_ scatter_add scatter_add_ scatter_reduce scatter_reduce_ select_scatter set_
    share_memory_ slice_inverse slice_scatter slogdet smm solve sparse_dim sparse_mask
    sparse_resize_ sparse_resize_and_clear_ split_with_sizes squeeze_ sspaddmm stft storage
    storage_type svd swapaxes_ swapdims_ symeig t_ to_dense to_mkldnn to_padded_tensor
    to_sparse to_sparse_bsc to_sparse_bsr to_sparse_coo to_sparse_csc to_sparse_csr transpose_
    triangular_solve tril_ triu_ type unfold uniform_ unique unique_consecutive unsafe_chunk
    unsafe_split unsafe_split_with_sizes unsqueeze_ untyped_storage values volatile vsplit
    xlogy xlogy_ xpu
""".split())
