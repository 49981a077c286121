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


def T(shape, dtype="float64", high=3, domain=None):
    """A tensor input: float64 (positive unless `domain` says), int64 in
    [0, high), or bool."""
    spec = {"shape": list(shape), "seed": 0}
    if dtype == "int64":
        spec.update(dtype="int64", high=high)
    elif dtype == "bool":
        spec.update(dtype="bool")
    else:
        spec.update(domain or POSITIVE)
    return spec


def is_tensor_spec(v):
    return isinstance(v, dict) and "shape" in v and "seed" in v


def _upsample(grad, out_size, in_size, corners):
    v = {"grad_output": T(grad, domain=SIGNED), "output_size": out_size, "input_size": in_size}
    if corners is not None:
        v["align_corners"] = corners
    return [v]


def _upsample_family():
    r = {}
    one = ([2, 3, 8], [8], [2, 3, 4])
    two = ([2, 3, 6, 8], [6, 8], [2, 3, 3, 4])
    three = ([1, 2, 4, 4, 6], [4, 4, 6], [1, 2, 2, 2, 3])
    for name, (grad, out_size, in_size), corners in [
            ("upsample_nearest1d_backward", one, None), ("_upsample_nearest_exact1d_backward", one, None),
            ("upsample_linear1d_backward", one, False),
            ("upsample_nearest2d_backward", two, None), ("_upsample_nearest_exact2d_backward", two, None),
            ("upsample_bilinear2d_backward", two, False), ("upsample_bicubic2d_backward", two, False),
            ("_upsample_bilinear2d_aa_backward", two, False), ("_upsample_bicubic2d_aa_backward", two, False),
            ("_upsample_lanczos2d_aa_backward", two, False),
            ("upsample_nearest3d_backward", three, None), ("_upsample_nearest_exact3d_backward", three, None),
            ("upsample_trilinear3d_backward", three, False)]:
        r[name] = _upsample(grad, out_size, in_size, corners)
    return r


def _batch_norm_family():
    x, c = [4, 3, 2, 2], [3]
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
    "_linalg_det": [{"A": T([2, 2], domain=SIGNED)}, {"A": T([3, 2, 2], domain=SIGNED)}],
    "_linalg_slogdet": [{"A": T([2, 2], domain=SIGNED)}, {"A": T([3, 2, 2], domain=SIGNED)}],
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
}
RECIPES["clip"] = RECIPES["clamp"]

# Overloads no recipe can sample, and why (the reason is what the samples
# file lists for them).
NOT_RECORDABLE = {
    "_conj": "complex values, which the corpus's records do not hold",
    "_fft_c2c": "complex values, which the corpus's records do not hold",
    "_fft_c2r": "complex values, which the corpus's records do not hold",
    "_fft_r2c": "complex values, which the corpus's records do not hold",
    "view_as_complex": "complex values, which the corpus's records do not hold",
    "view_as_real": "complex values, which the corpus's records do not hold",
    "linalg_eig": "complex values, which the corpus's records do not hold",
    "lu_unpack": "an int32 pivots input, which the corpus's inputs do not hold",
    "linalg_lu_solve": "an int32 pivots input, which the corpus's inputs do not hold",
    "linalg_ldl_solve": "an int32 pivots input, which the corpus's inputs do not hold",
    "_scaled_dot_product_flash_attention": "runs on CUDA only (tests/core/ops/attention_plans_test.cc)",
    "_scaled_dot_product_flash_attention_backward": "runs on CUDA only (tests/core/ops/attention_plans_test.cc)",
    "_scaled_dot_product_efficient_attention": "runs on CUDA only (tests/core/ops/attention_plans_test.cc)",
    "_scaled_dot_product_efficient_attention_backward": "runs on CUDA only (tests/core/ops/attention_plans_test.cc)",
    "_scaled_dot_product_cudnn_attention": "runs on CUDA only (tests/core/ops/attention_plans_test.cc)",
    "_scaled_dot_product_cudnn_attention_backward": "runs on CUDA only (tests/core/ops/attention_plans_test.cc)",
    "_fused_rms_norm_backward": "no CPU kernel in LibTorch 2.15",
    "_scaled_mm": "float8 inputs, which the corpus's inputs do not hold",
    "_grouped_mm": "float32/bfloat16 inputs only, which the corpus's inputs do not hold",
    "_amp_foreach_non_finite_check_and_unscale": "a float32 inv_scale, which the corpus's inputs do not hold",
    "linalg_lu_factor_ex": "an int32 pivots out=, which the corpus's inputs do not hold",
    "_linalg_check_errors": "an int32 info input, which the corpus's inputs do not hold",
    "to": "a ScalarType argument, which the corpus's programs do not pass",
    "view": "a ScalarType argument, which the corpus's programs do not pass",
}


def recipe_of(base):
    """The variants for operator `base` ("clamp_" uses "clamp"'s), or None."""
    return RECIPES.get(base) or RECIPES.get(base.rstrip("_"))


def not_recordable(base):
    """Why operator `base` gets no samples (as recipe_of), or None."""
    return NOT_RECORDABLE.get(base) or NOT_RECORDABLE.get(base.rstrip("_"))
