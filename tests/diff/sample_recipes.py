"""Hand-written calls for the overloads whose schema-built calls do not run
(sample_overloads.py, issue #33): per operator, the arguments by name, with
shapes and values that make sense for it (a clamp's bounds, a loss's
class targets, a batch norm's statistics, an upsampling's sizes). Used by
sample_overloads.py; the samples they give are the "recipes" of
testdata/validation_samples.json, laid out in a shard of their own
(generate_programs.py), so that adding one moves no schema-built program.

A recipe is a list of variants (one sample each); a variant maps argument
names to values: T(...) for a tensor, a list of them for Tensor[] (None in
a Tensor?[]), or a literal. "name@Tensor" is used instead of "name" where the
overload takes a tensor there (clamp.Tensor's min). Arguments a variant does
not name take their defaults; out= tensors are shaped as the functional
overload's results, or given by the variant.
"""

# The value domains of sample_overloads.py: inside (0.1, 0.9), then signed.
POSITIVE = {"scale": 0.8, "offset": 0.5}
SIGNED = {"scale": 1.0, "offset": 0.0}


def T(shape, dtype="float64", high=3, domain=None, low=0, sorted_=False):
    """A tensor input: float64, float32, bfloat16, float8_e4m3fn or
    complex128 (positive unless `domain` says), int64, int32 or uint8 in
    [low, high), or bool; sorted
    along its last dim with sorted_ (Note [Input values] in program.cc)."""
    spec = {"shape": list(shape), "seed": 0}
    if dtype in ("int64", "int32", "uint8"):
        spec.update(dtype=dtype, high=high)
        if low:
            spec["low"] = low
    elif dtype == "bool":
        spec.update(dtype="bool")
    else:
        spec.update(domain or POSITIVE)
        if dtype != "float64":
            spec["dtype"] = dtype
    if sorted_:
        spec["sorted"] = True
    return spec


def D(name):
    """A ScalarType argument (torch.float32 for "float32")."""
    return {"dtype": name}


def is_tensor_spec(v):
    return isinstance(v, dict) and "shape" in v and "seed" in v


def _upsample(sizes, corners):
    """One variant per (grad, output_size, input_size) of `sizes`; the
    interpolating ones alternate align_corners."""
    variants = []
    for k, (grad, out_size, in_size) in enumerate(sizes):
        v = {"grad_output": T(grad, domain=SIGNED), "output_size": out_size, "input_size": in_size}
        if corners is not None:
            v["align_corners"] = corners if k != 2 else not corners
        variants.append(v)
    return variants


def _upsample_family():
    r = {}
    # Per spatial rank: the first size of before, then a smaller scale and a
    # non-integer one (5 from 2, 7 from 3).
    one = [([2, 3, 8], [8], [2, 3, 4]), ([4, 2, 6], [6], [4, 2, 3]), ([1, 3, 5], [5], [1, 3, 2])]
    two = [([2, 3, 6, 8], [6, 8], [2, 3, 3, 4]), ([2, 2, 4, 4], [4, 4], [2, 2, 2, 2]),
           ([1, 3, 5, 7], [5, 7], [1, 3, 2, 3])]
    three = [([1, 2, 4, 4, 6], [4, 4, 6], [1, 2, 2, 2, 3]), ([2, 1, 2, 4, 4], [2, 4, 4], [2, 1, 1, 2, 2]),
             ([1, 3, 3, 5, 2], [3, 5, 2], [1, 3, 2, 2, 1])]
    for name, sizes, corners in [
            ("upsample_nearest1d_backward", one, None), ("_upsample_nearest_exact1d_backward", one, None),
            ("upsample_linear1d_backward", one, False),
            ("upsample_nearest2d_backward", two, None), ("_upsample_nearest_exact2d_backward", two, None),
            ("upsample_bilinear2d_backward", two, False), ("upsample_bicubic2d_backward", two, False),
            ("_upsample_bilinear2d_aa_backward", two, False), ("_upsample_bicubic2d_aa_backward", two, False),
            ("_upsample_lanczos2d_aa_backward", two, False),
            ("upsample_nearest3d_backward", three, None), ("_upsample_nearest_exact3d_backward", three, None),
            ("upsample_trilinear3d_backward", three, False)]:
        r[name] = _upsample(sizes, corners)
    return r


def _batch_norm_family():
    """Each variant list for three (input, channels) shapes: the first of
    before, then [6, 2, 3] and [2, 4, 3, 3]."""
    families = [_batch_norm_variants(x, c) for x, c in (([4, 3, 2, 2], [3]), ([6, 2, 3], [2]), ([2, 4, 3, 3], [4]))]
    return {name: [v for f in families for v in f[name]] for name in families[0]}


def _batch_norm_variants(x, c):
    stats = {"input": T(x, domain=SIGNED), "weight": T(c), "bias": T(c, domain=SIGNED),
             "running_mean": T(c, domain=SIGNED), "running_var": T(c), "momentum": 0.1, "eps": 1e-5}
    train = dict(stats, training=True)
    evaluate = dict(stats, training=False)
    no_stats = {k: v for k, v in train.items() if not k.startswith("running")}
    backward = {"grad_out": T(x, domain=SIGNED), "input": T(x, domain=SIGNED), "weight": T(c),
                "running_mean": T(c, domain=SIGNED), "running_var": T(c), "save_mean": T(c, domain=SIGNED),
                "save_invstd": T(c), "eps": 1e-5, "output_mask": [True, True, True]}
    return {
        "_native_batch_norm_legit": [train, evaluate, no_stats],
        "_native_batch_norm_legit_functional": [train, evaluate],
        "_native_batch_norm_legit_no_training": [stats],
        "native_batch_norm": [train, evaluate],
        "_batch_norm_with_update": [stats],
        "_batch_norm_with_update_functional": [stats],
        "native_batch_norm_backward": [dict(backward, train=True), dict(backward, train=False)],
    }


def _adam_family():
    shapes = [[4, 3], [5], [2, 6]]
    lists = {"self": [T(s, domain=SIGNED) for s in shapes], "grads": [T(s, domain=SIGNED) for s in shapes],
             "exp_avgs": [T(s, domain=SIGNED) for s in shapes], "exp_avg_sqs": [T(s) for s in shapes],
             "max_exp_avg_sqs": [], "state_steps": [T([]) for _ in shapes],
             "beta1": 0.9, "beta2": 0.999, "weight_decay": 0.01, "eps": 1e-8, "amsgrad": False, "maximize": False}
    v = [dict(lists, lr=0.01, **{"lr@Tensor": T([])}), dict(lists, lr=0.1, maximize=True, **{"lr@Tensor": T([])})]
    other = [[3, 2], [7]]
    v.append({"self": [T(s, domain=SIGNED) for s in other], "grads": [T(s, domain=SIGNED) for s in other],
              "exp_avgs": [T(s, domain=SIGNED) for s in other], "exp_avg_sqs": [T(s) for s in other],
              "max_exp_avg_sqs": [T(s) for s in other], "state_steps": [T([]) for _ in other],
              "beta1": 0.8, "beta2": 0.99, "weight_decay": 0.0, "eps": 1e-6, "amsgrad": True, "maximize": False,
              "lr": 0.05, "lr@Tensor": T([])})
    return {"_fused_adam": v, "_fused_adamw": v}


def _index_put_variants():
    rows = {"self": T([4, 6], domain=SIGNED), "indices": [T([3], "int64", high=4)], "values": T([3, 6], domain=SIGNED)}
    cols = {"self": T([4, 6], domain=SIGNED), "indices": [None, T([2], "int64", high=6)], "values": T([4, 2])}
    return [rows, dict(rows, accumulate=True), cols]


RECIPES = {
    **_upsample_family(),
    **_batch_norm_family(),
    **_adam_family(),
    "clamp": [{"self": T([4, 6], domain=SIGNED), "min": -0.2, "max": 0.3,
               "min@Tensor": T([4, 6], domain=SIGNED), "max@Tensor": T([6])},
              {"self": T([2, 3, 4], domain=SIGNED), "min": 0.1, "min@Tensor": T([2, 3, 4], domain=SIGNED)}],
    "masked_fill": [{"self": T([4, 6], domain=SIGNED), "mask": T([4, 6], "bool"), "value": 0.5},
                    {"self": T([2, 3, 4], domain=SIGNED), "mask": T([3, 4], "bool"), "value": -1.0}],
    "where": [{"condition": T([4, 6], "bool"), "self": T([4, 6], domain=SIGNED), "other": T([4, 6])},
              {"condition": T([2, 3, 4], "bool"), "self": T([2, 3, 4]), "other": T([4], domain=SIGNED)}],
    "addmm": [{"self": T([3, 5]), "mat1": T([3, 4], domain=SIGNED), "mat2": T([4, 5])},
              {"self": T([6, 2]), "mat1": T([6, 4]), "mat2": T([4, 2], domain=SIGNED), "beta": 0.5, "alpha": 2.0}],
    "baddbmm": [{"self": T([2, 3, 5]), "batch1": T([2, 3, 4], domain=SIGNED), "batch2": T([2, 4, 5])},
                {"self": T([4, 2, 2]), "batch1": T([4, 2, 3]), "batch2": T([4, 3, 2], domain=SIGNED),
                 "beta": 0.5, "alpha": 2.0}],
    "constant_pad_nd": [{"self": T([4, 6]), "pad": [1, 2]}, {"self": T([2, 3, 4]), "pad": [1, 0, 0, 2], "value": 0.5}],
    "diagonal_scatter": [{"self": T([4, 6]), "src": T([4], domain=SIGNED)},
                         {"self": T([4, 6]), "src": T([3], domain=SIGNED), "offset": 1}],
    "select_scatter": [{"self": T([4, 6]), "src": T([6], domain=SIGNED), "dim": 0, "index": 1},
                       {"self": T([2, 3, 4]), "src": T([2, 4], domain=SIGNED), "dim": 1, "index": 2}],
    "select_backward": [{"grad_output": T([6], domain=SIGNED), "input_sizes": [4, 6], "dim": 0, "index": 1},
                        {"grad_output": T([2, 4], domain=SIGNED), "input_sizes": [2, 3, 4], "dim": 1, "index": 2}],
    "slice_backward": [{"grad_output": T([2, 6], domain=SIGNED), "input_sizes": [4, 6], "dim": 0,
                        "start": 1, "end": 3, "step": 1},
                       {"grad_output": T([2, 3, 2], domain=SIGNED), "input_sizes": [2, 3, 4], "dim": 2,
                        "start": 0, "end": 4, "step": 2}],
    "split_with_sizes_copy": [{"self": T([4, 6]), "split_sizes": [1, 3], "dim": 0},
                              {"self": T([2, 3, 4]), "split_sizes": [2, 1, 1], "dim": 2}],
    "embedding_dense_backward": [{"grad_output": T([3, 4], domain=SIGNED), "indices": T([3], "int64", high=5),
                                  "num_weights": 5, "padding_idx": -1, "scale_grad_by_freq": False},
                                 {"grad_output": T([2, 3, 4], domain=SIGNED), "indices": T([2, 3], "int64", high=6),
                                  "num_weights": 6, "padding_idx": 2, "scale_grad_by_freq": True}],
    "index_fill": [{"self": T([4, 6]), "dim": 1, "index": T([2], "int64", high=6), "value": T([])},
                   {"self": T([2, 3, 4]), "dim": 0, "index": T([1], "int64", high=2), "value": T([], domain=SIGNED)}],
    "index_reduce": [{"self": T([4, 6]), "dim": 0, "index": T([3], "int64", high=4), "source": T([3, 6]),
                      "reduce": "prod"},
                     {"self": T([4, 6], domain=SIGNED), "dim": 1, "index": T([4], "int64", high=6),
                      "source": T([4, 4], domain=SIGNED), "reduce": "amax", "include_self": False},
                     {"self": T([4, 6]), "dim": 0, "index": T([2], "int64", high=4), "source": T([2, 6]),
                      "reduce": "mean"}],
    "index_put": _index_put_variants(),
    "_index_put_impl": _index_put_variants(),
    "index": [{"self": T([4, 6]), "indices": [T([3], "int64", high=4)]},
              {"self": T([4, 6]), "indices": [None, T([2], "int64", high=6)]}],
    "max_pool2d_with_indices_backward": [
        {"grad_output": T([2, 3, 2, 2], domain=SIGNED), "self": T([2, 3, 4, 4]), "kernel_size": [2, 2],
         "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1], "ceil_mode": False,
         "indices": T([2, 3, 2, 2], "int64", high=16)}],
    "grid_sampler_2d": [{"input": T([2, 3, 4, 4], domain=SIGNED), "grid": T([2, 3, 3, 2], domain=SIGNED),
                         "interpolation_mode": 0, "padding_mode": 0, "align_corners": False},
                        {"input": T([1, 2, 4, 5]), "grid": T([1, 2, 2, 2], domain=SIGNED),
                         "interpolation_mode": 1, "padding_mode": 1, "align_corners": True}],
    "grid_sampler_3d": [{"input": T([1, 2, 3, 3, 3], domain=SIGNED), "grid": T([1, 2, 2, 2, 3], domain=SIGNED),
                         "interpolation_mode": 0, "padding_mode": 0, "align_corners": False}],
    "grid_sampler_2d_backward": [{"grad_output": T([2, 3, 3, 3], domain=SIGNED), "input": T([2, 3, 4, 4]),
                                  "grid": T([2, 3, 3, 2], domain=SIGNED), "interpolation_mode": 0,
                                  "padding_mode": 0, "align_corners": False, "output_mask": [True, True]}],
    "grid_sampler_3d_backward": [{"grad_output": T([1, 2, 2, 2, 2], domain=SIGNED), "input": T([1, 2, 3, 3, 3]),
                                  "grid": T([1, 2, 2, 2, 3], domain=SIGNED), "interpolation_mode": 0,
                                  "padding_mode": 0, "align_corners": False, "output_mask": [True, True]}],
    "fractional_max_pool2d": [{"self": T([2, 3, 6, 6], domain=SIGNED), "kernel_size": [2, 2], "output_size": [3, 3],
                               "random_samples": T([2, 3, 2])}],
    "fractional_max_pool3d": [{"self": T([1, 2, 6, 6, 6], domain=SIGNED), "kernel_size": [2, 2, 2],
                               "output_size": [3, 3, 3], "random_samples": T([1, 2, 3])}],
    "convolution_backward": [
        {"grad_output": T([2, 4, 3, 3], domain=SIGNED), "input": T([2, 3, 5, 5], domain=SIGNED),
         "weight": T([4, 3, 3, 3], domain=SIGNED), "bias_sizes": [4], "stride": [1, 1], "padding": [0, 0],
         "dilation": [1, 1], "transposed": False, "output_padding": [0, 0], "groups": 1,
         "output_mask": [True, True, True]},
        {"grad_output": T([2, 4, 4], domain=SIGNED), "input": T([2, 2, 5], domain=SIGNED),
         "weight": T([4, 1, 2], domain=SIGNED), "bias_sizes": None, "stride": [1], "padding": [0],
         "dilation": [1], "transposed": False, "output_padding": [0], "groups": 2,
         "output_mask": [True, True, False]}],
    "nll_loss_forward": [{"self": T([4, 5], domain=SIGNED), "target": T([4], "int64", high=5), "weight": None,
                          "reduction": r, "ignore_index": -100} for r in (0, 1, 2)],
    "nll_loss_backward": [{"grad_output": T([] if r else [4], domain=SIGNED), "self": T([4, 5], domain=SIGNED),
                           "target": T([4], "int64", high=5), "weight": None, "reduction": r,
                           "ignore_index": -100, "total_weight": T([])} for r in (0, 1, 2)],
    "nll_loss2d_forward": [{"self": T([2, 3, 2, 4], domain=SIGNED), "target": T([2, 2, 4], "int64", high=3),
                            "weight": None, "reduction": r, "ignore_index": -100} for r in (0, 1, 2)],
    "nll_loss2d_backward": [{"grad_output": T([] if r else [2, 2, 4], domain=SIGNED),
                             "self": T([2, 3, 2, 4], domain=SIGNED), "target": T([2, 2, 4], "int64", high=3),
                             "weight": None, "reduction": r, "ignore_index": -100, "total_weight": T([])}
                            for r in (0, 1, 2)],
    "native_layer_norm_backward": [
        {"grad_out": T([4, 6], domain=SIGNED), "input": T([4, 6], domain=SIGNED), "normalized_shape": [6],
         "mean": T([4, 1], domain=SIGNED), "rstd": T([4, 1]), "weight": T([6]), "bias": T([6]),
         "output_mask": [True, True, True]},
        {"grad_out": T([2, 3, 4], domain=SIGNED), "input": T([2, 3, 4], domain=SIGNED), "normalized_shape": [3, 4],
         "mean": T([2, 1, 1], domain=SIGNED), "rstd": T([2, 1, 1]), "weight": None, "bias": None,
         "output_mask": [True, False, False]}],
    "native_group_norm": [{"input": T([2, 4, 3], domain=SIGNED), "weight": T([4]), "bias": T([4], domain=SIGNED),
                           "N": 2, "C": 4, "HxW": 3, "group": 2, "eps": 1e-5}],
    "_foreach_mm": [{"self": [T([4, 3], domain=SIGNED), T([2, 5])], "mat2": [T([3, 2]), T([5, 3], domain=SIGNED)]}],
    "eye": [{"n": 3, "m": 4, "out": T([3, 4])}],
    # Matrices of 2 x 2: the corpus's values run in arithmetic progressions,
    # so larger square matrices are singular and their solves mere rounding.
    "linalg_inv_ex": [{"A": T([2, 2], domain=SIGNED)}, {"A": T([3, 2, 2], domain=SIGNED)}],
    "linalg_cholesky_ex": [{"self": T([2, 2], domain=SIGNED)}, {"self": T([3, 2, 2], domain=SIGNED), "upper": True}],
    "_linalg_det": [{"A": T([2, 2], domain=SIGNED)}, {"A": T([3, 2, 2], domain=SIGNED)}, {"A": T([2, 2])}],
    "_linalg_slogdet": [{"A": T([2, 2], domain=SIGNED)}, {"A": T([3, 2, 2], domain=SIGNED)}, {"A": T([2, 2])}],
    "_linalg_solve_ex": [{"A": T([2, 2], domain=SIGNED), "B": T([2, 3])},
                         {"A": T([3, 2, 2], domain=SIGNED), "B": T([3, 2, 4]), "left": True}],
    "linalg_householder_product": [{"input": T([4, 3], domain=SIGNED), "tau": T([3])},
                                   {"input": T([2, 4, 2], domain=SIGNED), "tau": T([2, 2])}],
    "ormqr": [{"self": T([4, 3], domain=SIGNED), "input2": T([3]), "input3": T([4, 2], domain=SIGNED)},
              {"self": T([4, 3], domain=SIGNED), "input2": T([3]), "input3": T([2, 4], domain=SIGNED),
               "left": False, "transpose": True}],
    "linalg_ldl_factor_ex": [{"self": T([2, 2], domain=SIGNED)}, {"self": T([3, 2, 2], domain=SIGNED)}],
    "frexp": [{"self": T([4, 6], domain=SIGNED)}, {"self": T([2, 3, 4])}],
    "max_unpool2d": [{"self": T([2, 3, 2, 2], domain=SIGNED), "indices": T([2, 3, 2, 2], "int64", high=16),
                      "output_size": [4, 4]}],
    "max_unpool3d": [{"self": T([1, 2, 2, 2, 2], domain=SIGNED), "indices": T([1, 2, 2, 2, 2], "int64", high=64),
                      "output_size": [4, 4, 4], "stride": [2, 2, 2], "padding": [0, 0, 0]}],
    "detach": [{"self": T([4, 6])}],
    # Random fills whose schema-built calls lack a probability, a range or
    # an out= the sampler can size (their values are not compared).
    "bernoulli": [{"self": T([4, 6]), "p": 0.3}, {"self": T([2, 3, 4]), "p": 0.7}, {"self": T([5]), "p": 0.5},
                  {"self": T([3, 5]), "p": 0.1}],
    "normal": [{"self": T([4, 6]), "mean": 0.5, "std": 2.0, "out": T([4, 6])},
               {"self": T([2, 3, 4]), "out": T([2, 3, 4])}, {"self": T([5]), "std": 0.1, "out": T([5])}],
    "randint_like": [{"self": T([4, 6]), "low": 1, "high": 5, "out": T([4, 6])},
                     {"self": T([2, 3, 4]), "low": -2, "high": 2, "out": T([2, 3, 4])},
                     {"self": T([5], "int64"), "low": 0, "high": 9, "out": T([5], "int64")}],
    "bmm": [{"self": T([2, 3, 4]), "mat2": T([2, 4, 5], domain=SIGNED)},
            {"self": T([3, 2, 2], domain=SIGNED), "mat2": T([3, 2, 3])},
            {"self": T([1, 4, 3]), "mat2": T([1, 3, 2], domain=SIGNED)}],
    # Complex values (records hold (real, imaginary) pairs).
    "_conj": [{"self": T([4, 6], "complex128")}, {"self": T([2, 3, 4], "complex128", domain=SIGNED)},
              {"self": T([5], "complex128")}],
    "view_as_real": [{"self": T([4, 6], "complex128")}, {"self": T([2, 3, 4], "complex128", domain=SIGNED)},
                     {"self": T([5], "complex128")}],
    "view_as_complex": [{"self": T([4, 2])}, {"self": T([2, 3, 2], domain=SIGNED)}, {"self": T([6, 3, 2])}],
    "_fft_c2c": [{"self": T([4, 6], "complex128"), "dim": [1], "normalization": 0, "forward": True},
                 {"self": T([2, 3, 4], "complex128", domain=SIGNED), "dim": [0, 2], "normalization": 1,
                  "forward": False},
                 {"self": T([8], "complex128"), "dim": [0], "normalization": 2, "forward": True}],
    "_fft_r2c": [{"self": T([4, 6]), "dim": [1], "normalization": 0, "onesided": True},
                 {"self": T([2, 3, 4], domain=SIGNED), "dim": [0, 2], "normalization": 2, "onesided": False},
                 {"self": T([6]), "dim": [0], "normalization": 1, "onesided": True}],
    "_fft_c2r": [{"self": T([4, 4], "complex128"), "dim": [1], "normalization": 0, "last_dim_size": 6},
                 {"self": T([2, 3, 3], "complex128", domain=SIGNED), "dim": [0, 2], "normalization": 2,
                  "last_dim_size": 4},
                 {"self": T([5], "complex128"), "dim": [0], "normalization": 1, "last_dim_size": 8}],
    "linalg_eig": [{"self": T([2, 2], domain=SIGNED)}, {"self": T([3, 2, 2], domain=SIGNED)}, {"self": T([2, 2])}],
    # int32 pivots and infos, 1-based pivots in [1, n].
    "lu_unpack": [{"LU_data": T([2, 2], domain=SIGNED), "LU_pivots": T([2], "int32", low=1, high=3)},
                  {"LU_data": T([3, 2, 2], domain=SIGNED), "LU_pivots": T([3, 2], "int32", low=1, high=3)},
                  {"LU_data": T([3, 3]), "LU_pivots": T([3], "int32", low=1, high=4), "unpack_data": False}],
    "linalg_lu_solve": [{"LU": T([2, 2], domain=SIGNED), "pivots": T([2], "int32", low=1, high=3), "B": T([2, 3])},
                        {"LU": T([3, 2, 2], domain=SIGNED), "pivots": T([3, 2], "int32", low=1, high=3),
                         "B": T([3, 2, 4]), "adjoint": True},
                        {"LU": T([2, 2]), "pivots": T([2], "int32", low=1, high=3), "B": T([3, 2], domain=SIGNED),
                         "left": False}],
    "linalg_ldl_solve": [{"LD": T([2, 2], domain=SIGNED), "pivots": T([2], "int32", low=1, high=3), "B": T([2, 3])},
                         {"LD": T([3, 2, 2], domain=SIGNED), "pivots": T([3, 2], "int32", low=1, high=3),
                          "B": T([3, 2, 4])},
                         {"LD": T([2, 2]), "pivots": T([2], "int32", low=1, high=3), "B": T([2, 1], domain=SIGNED),
                          "hermitian": True}],
    "linalg_lu_factor_ex": [{"A": T([2, 2], domain=SIGNED)}, {"A": T([3, 2, 2], domain=SIGNED)},
                            {"A": T([2, 2]), "check_errors": False}],
    "_linalg_check_errors": [{"info": T([], "int32", high=1), "api_name": "linalg.inv", "is_matrix": True},
                             {"info": T([4], "int32", high=1), "api_name": "linalg.solve", "is_matrix": False},
                             {"info": T([2, 3], "int32", high=1), "api_name": "linalg.cholesky", "is_matrix": False}],
    # ScalarType arguments.
    "to": [{"self": T([4, 6]), "dtype": D("float32")}, {"self": T([2, 3, 4], domain=SIGNED), "dtype": D("int64")},
           {"self": T([5]), "dtype": D("bfloat16"), "copy": True}],
    "view": [{"self": T([4, 6]), "dtype": D("int64")}, {"self": T([2, 3, 4], domain=SIGNED), "dtype": D("complex128")},
             {"self": T([6], "float32"), "dtype": D("int32")}],
    # float32 and bfloat16 kernels.
    "_amp_foreach_non_finite_check_and_unscale": [
        {"self": [T([4, 3], domain=SIGNED), T([5])], "found_inf": T([1], "float32", domain={"scale": 0.0, "offset": 0.0}),
         "inv_scale": T([1], "float32")},
        {"self": [T([2, 3, 4])], "found_inf": T([1], "float32", domain={"scale": 0.0, "offset": 0.0}),
         "inv_scale": T([1], "float32", domain={"scale": 0.0, "offset": 0.25})},
        {"self": [T([6], domain=SIGNED), T([2, 2]), T([3, 1])],
         "found_inf": T([1], "float32", domain={"scale": 0.0, "offset": 0.0}), "inv_scale": T([1], "float32")}],
    # (Rows of 16 bytes: the kernel's alignment.)
    "_grouped_mm": [{"self": T([3, 4, 8], "float32", domain=SIGNED), "mat2": T([3, 8, 4], "float32")},
                    {"self": T([4, 8], "float32"), "mat2": T([1, 8, 4], "float32", domain=SIGNED),
                     "offs": T([1], "int32", low=4, high=5)},  # one group of all 4 rows (rows past offs are unset)
                    {"self": T([2, 4, 8], "bfloat16", domain=SIGNED), "mat2": T([2, 8, 8], "bfloat16")}],
    # float8 matmuls (CPU has a kernel): per-tensor scales, a float32 or
    # bfloat16 result.
    "_scaled_mm": [{"self": T([4, 8], "float8_e4m3fn", domain=SIGNED), "mat2": T([8, 6], "float8_e4m3fn"),
                    "scale_a": T([], "float32"), "scale_b": T([], "float32"), "out_dtype": D("float32")},
                   {"self": T([6, 4], "float8_e4m3fn"), "mat2": T([4, 8], "float8_e4m3fn", domain=SIGNED),
                    "scale_a": T([], "float32"), "scale_b": T([], "float32"), "out_dtype": D("bfloat16")},
                   {"self": T([8, 8], "float8_e4m3fn", domain=SIGNED), "mat2": T([8, 4], "float8_e4m3fn"),
                    "scale_a": T([], "float32"), "scale_b": T([], "float32"), "bias": T([4], "float32"),
                    "out_dtype": D("float32")}],
    # Sorted boundaries.
    "bucketize": [{"self": T([4, 6]), "boundaries": T([5], sorted_=True)},
                  {"self": T([2, 3, 4], domain=SIGNED), "boundaries": T([3], domain=SIGNED, sorted_=True), "right": True},
                  {"self": T([6]), "boundaries": T([4], sorted_=True), "out_int32": True}],
    "native_dropout_backward": [{"grad_output": T([4, 6], domain=SIGNED), "mask": T([4, 6], "bool"), "scale": 2.0},
                                {"grad_output": T([2, 3, 4]), "mask": T([2, 3, 4], "bool"), "scale": 1.25},
                                {"grad_output": T([5], domain=SIGNED), "mask": T([5], "bool"), "scale": 0.5}],
}

# Variants that give each overload at least three samples (issue #33),
# appended, so that the samples of before keep their order and placements.
_MORE_VARIANTS = {
    "clamp": [{"self": T([3, 5], domain=SIGNED), "max": 0.2, "max@Tensor": T([3, 1], domain=SIGNED)}],
    "masked_fill": [{"self": T([5, 3]), "mask": T([5, 1], "bool"), "value": 2.0}],
    "where": [{"condition": T([4, 1], "bool"), "self": T([4, 6], domain=SIGNED), "other": T([4, 6])}],
    "addmm": [{"self": T([5]), "mat1": T([2, 3], domain=SIGNED), "mat2": T([3, 5])},
              {"self": T([2, 5], domain=SIGNED), "mat1": T([2, 3]), "mat2": T([3, 5]), "beta": -1.0}],
    "baddbmm": [{"self": T([5]), "batch1": T([3, 2, 4]), "batch2": T([3, 4, 5], domain=SIGNED), "beta": 2.0},
                {"self": T([3, 2, 5], domain=SIGNED), "batch1": T([3, 2, 4]), "batch2": T([3, 4, 5]), "alpha": -0.5}],
    "constant_pad_nd": [{"self": T([2, 2, 3, 4], domain=SIGNED), "pad": [0, 1, 2, 0, 1, 1], "value": -1.0}],
    "diagonal_scatter": [{"self": T([2, 3, 4]), "src": T([2, 3], domain=SIGNED), "dim1": 1, "dim2": 2},
                         {"self": T([5, 3]), "src": T([2], domain=SIGNED), "offset": -3}],
    "select_scatter": [{"self": T([3, 5]), "src": T([3], domain=SIGNED), "dim": 1, "index": -1}],
    "select_backward": [{"grad_output": T([3, 4], domain=SIGNED), "input_sizes": [3, 5, 4], "dim": 1, "index": 4}],
    "slice_backward": [{"grad_output": T([4, 2], domain=SIGNED), "input_sizes": [4, 6], "dim": 1,
                        "start": 3, "end": 5, "step": 1}],
    "split_with_sizes_copy": [{"self": T([6, 2]), "split_sizes": [2, 2, 2], "dim": 0}],
    "embedding_dense_backward": [{"grad_output": T([5, 3], domain=SIGNED), "indices": T([5], "int64", high=4),
                                  "num_weights": 4, "padding_idx": 0, "scale_grad_by_freq": False}],
    "index_fill": [{"self": T([3, 5], domain=SIGNED), "dim": -1, "index": T([3], "int64", high=5), "value": T([])}],
    "index": [{"self": T([2, 3, 4]), "indices": [None, None, T([2], "int64", high=4)]}],
    "max_pool2d_with_indices_backward": [
        {"grad_output": T([1, 2, 3, 3], domain=SIGNED), "self": T([1, 2, 6, 6]), "kernel_size": [2, 2],
         "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1], "ceil_mode": False,
         "indices": T([1, 2, 3, 3], "int64", high=36)},
        {"grad_output": T([2, 2, 4, 4], domain=SIGNED), "self": T([2, 2, 4, 4]), "kernel_size": [3, 3],
         "stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "ceil_mode": False,
         "indices": T([2, 2, 4, 4], "int64", high=16)}],
    "grid_sampler_2d": [{"input": T([2, 1, 3, 3]), "grid": T([2, 4, 2, 2], domain=SIGNED),
                         "interpolation_mode": 2, "padding_mode": 2, "align_corners": False}],
    "grid_sampler_3d": [{"input": T([2, 1, 2, 3, 3]), "grid": T([2, 1, 2, 2, 3], domain=SIGNED),
                         "interpolation_mode": 1, "padding_mode": 1, "align_corners": True},
                        {"input": T([1, 3, 2, 2, 2], domain=SIGNED), "grid": T([1, 3, 1, 2, 3], domain=SIGNED),
                         "interpolation_mode": 0, "padding_mode": 2, "align_corners": True}],
    "grid_sampler_2d_backward": [
        {"grad_output": T([1, 2, 2, 4], domain=SIGNED), "input": T([1, 2, 3, 5]),
         "grid": T([1, 2, 4, 2], domain=SIGNED), "interpolation_mode": 1, "padding_mode": 1,
         "align_corners": True, "output_mask": [True, True]},
        {"grad_output": T([2, 1, 3, 2], domain=SIGNED), "input": T([2, 1, 4, 4], domain=SIGNED),
         "grid": T([2, 3, 2, 2], domain=SIGNED), "interpolation_mode": 0, "padding_mode": 2,
         "align_corners": False, "output_mask": [True, True]}],
    "grid_sampler_3d_backward": [
        {"grad_output": T([2, 1, 1, 2, 2], domain=SIGNED), "input": T([2, 1, 2, 3, 3]),
         "grid": T([2, 1, 2, 2, 3], domain=SIGNED), "interpolation_mode": 1, "padding_mode": 1,
         "align_corners": True, "output_mask": [True, True]},
        {"grad_output": T([1, 3, 1, 2, 2], domain=SIGNED), "input": T([1, 3, 2, 2, 2], domain=SIGNED),
         "grid": T([1, 1, 2, 2, 3], domain=SIGNED), "interpolation_mode": 0, "padding_mode": 2,
         "align_corners": False, "output_mask": [True, True]}],
    "fractional_max_pool2d": [
        {"self": T([1, 2, 5, 5]), "kernel_size": [2, 2], "output_size": [2, 2], "random_samples": T([1, 2, 2])},
        {"self": T([2, 1, 4, 6], domain=SIGNED), "kernel_size": [3, 2], "output_size": [2, 3],
         "random_samples": T([2, 1, 2])}],
    "fractional_max_pool3d": [
        {"self": T([2, 1, 4, 4, 4]), "kernel_size": [2, 2, 2], "output_size": [2, 2, 2],
         "random_samples": T([2, 1, 3])},
        {"self": T([1, 1, 5, 4, 6], domain=SIGNED), "kernel_size": [2, 2, 3], "output_size": [3, 2, 2],
         "random_samples": T([1, 1, 3])}],
    "convolution_backward": [
        {"grad_output": T([1, 2, 3, 3], domain=SIGNED), "input": T([1, 3, 5, 5], domain=SIGNED),
         "weight": T([2, 3, 3, 3], domain=SIGNED), "bias_sizes": [2], "stride": [2, 2], "padding": [1, 1],
         "dilation": [1, 1], "transposed": False, "output_padding": [0, 0], "groups": 1,
         "output_mask": [True, True, True]},
        {"grad_output": T([2, 2, 3], domain=SIGNED), "input": T([2, 4, 5], domain=SIGNED),
         "weight": T([2, 4, 3], domain=SIGNED), "bias_sizes": [2], "stride": [1], "padding": [0],
         "dilation": [1], "transposed": False, "output_padding": [0], "groups": 1,
         "output_mask": [True, True, True]}],
    "native_layer_norm_backward": [
        {"grad_out": T([3, 5], domain=SIGNED), "input": T([3, 5], domain=SIGNED), "normalized_shape": [5],
         "mean": T([3, 1], domain=SIGNED), "rstd": T([3, 1]), "weight": T([5]), "bias": T([5], domain=SIGNED),
         "output_mask": [True, True, True]},
        {"grad_out": T([2, 2, 3], domain=SIGNED), "input": T([2, 2, 3], domain=SIGNED), "normalized_shape": [2, 3],
         "mean": T([2, 1, 1], domain=SIGNED), "rstd": T([2, 1, 1]), "weight": T([2, 3]), "bias": T([2, 3]),
         "output_mask": [True, True, True]}],
    "native_group_norm": [{"input": T([3, 6, 2, 2], domain=SIGNED), "weight": T([6]), "bias": T([6], domain=SIGNED),
                           "N": 3, "C": 6, "HxW": 4, "group": 3, "eps": 1e-5},
                          {"input": T([2, 2, 5], domain=SIGNED), "weight": None, "bias": None,
                           "N": 2, "C": 2, "HxW": 5, "group": 1, "eps": 1e-5}],
    "_foreach_mm": [{"self": [T([2, 2], domain=SIGNED)], "mat2": [T([2, 4])]},
                    {"self": [T([3, 4]), T([1, 2]), T([5, 3], domain=SIGNED)],
                     "mat2": [T([4, 2], domain=SIGNED), T([2, 2]), T([3, 1])]}],
    "eye": [{"n": 2, "m": 5, "out": T([2, 5])}, {"n": 4, "m": 4, "out": T([4, 4])}],
    "linalg_inv_ex": [{"A": T([2, 2, 2], domain=SIGNED)}],
    "linalg_cholesky_ex": [{"self": T([2, 2, 2], domain=SIGNED)}],
    "_linalg_solve_ex": [{"A": T([2, 2], domain=SIGNED), "B": T([3, 2]), "left": False}],
    "linalg_householder_product": [{"input": T([3, 3], domain=SIGNED), "tau": T([2])}],
    "ormqr": [{"self": T([3, 2], domain=SIGNED), "input2": T([2]), "input3": T([3, 3], domain=SIGNED),
               "transpose": True}],
    "linalg_ldl_factor_ex": [{"self": T([4, 2, 2], domain=SIGNED), "hermitian": True}],
    "frexp": [{"self": T([5])}],
    "max_unpool2d": [{"self": T([1, 2, 3, 3]), "indices": T([1, 2, 3, 3], "int64", high=36), "output_size": [6, 6]},
                     {"self": T([2, 1, 2, 3], domain=SIGNED), "indices": T([2, 1, 2, 3], "int64", high=24),
                      "output_size": [4, 6]}],
    "max_unpool3d": [{"self": T([2, 1, 2, 2, 1]), "indices": T([2, 1, 2, 2, 1], "int64", high=32),
                      "output_size": [4, 4, 2], "stride": [2, 2, 2], "padding": [0, 0, 0]},
                     {"self": T([1, 3, 1, 2, 2], domain=SIGNED), "indices": T([1, 3, 1, 2, 2], "int64", high=16),
                      "output_size": [2, 2, 4], "stride": [2, 1, 2], "padding": [0, 0, 0]}],
    "detach": [{"self": T([6])}, {"self": T([2, 3, 4], domain=SIGNED)}],
}
for _name, _more in _MORE_VARIANTS.items():
    RECIPES[_name] = RECIPES[_name] + _more
RECIPES["clip"] = RECIPES["clamp"]

# Overloads no recipe can sample, and why (the reason is what the samples
# file lists for them).
NOT_RECORDABLE = {
    "_scaled_dot_product_flash_attention": "runs on CUDA only (tests/core/ops/attention_ops_test.cc)",
    "_scaled_dot_product_flash_attention_backward": "runs on CUDA only (tests/core/ops/attention_ops_test.cc)",
    "_scaled_dot_product_efficient_attention": "runs on CUDA only (tests/core/ops/attention_ops_test.cc)",
    "_scaled_dot_product_efficient_attention_backward": "runs on CUDA only (tests/core/ops/attention_ops_test.cc)",
    "_scaled_dot_product_cudnn_attention": "runs on CUDA only (tests/core/ops/attention_ops_test.cc)",
    "_scaled_dot_product_cudnn_attention_backward": "runs on CUDA only (tests/core/ops/attention_ops_test.cc)",
    "_fused_rms_norm_backward": "no CPU kernel in LibTorch 2.15 (tests/core/ops/rms_norm_plans_test.cc)",
}


def recipe_of(base):
    """The variants for operator `base` ("clamp_" uses "clamp"'s), or None."""
    return RECIPES.get(base) or RECIPES.get(base.rstrip("_"))


def not_recordable(base):
    """Why operator `base` gets no samples (as recipe_of), or None."""
    return NOT_RECORDABLE.get(base) or NOT_RECORDABLE.get(base.rstrip("_"))
