// The FFT kernels (_fft_r2c, _fft_c2r, _fft_c2c, what torch.fft's functions
// call): a transform along `dim` mixes every element of those dims, so a
// shard of another dim stays, as PyTorch 2.15's strategy; the transform is
// linear, so a Partial(sum | avg) input stays Partial. (PyTorch 2.15 also
// passes Partial(max | min) through, which is wrong: the FFT of a maximum is
// not the maximum of the FFTs; here such an input is reduced first.) No rank
// may hold an empty piece: MKL's FFT (LibTorch 2.11's CPU backend) refuses an
// empty batch ("DFTI ERROR: Inconsistent configuration parameters"), so 6
// rows over 4 ranks (2, 2, 2, 0) are gathered instead, as the spatial ops do
// (Note [Empty pieces of spatial ops] in core/ops/spatial_rules.cc).
//   _fft_r2c(x [S(0)] f[8, 16], dim=[1]) -> c[8, 9] [S(0)], no comm
#include <algorithm>
#include <vector>

#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

DimRule fft_rule() {
  return [](const OpCall& call, int mesh_dim) {
    (void)mesh_dim;
    const int64_t ndim = detail::input_ndim(call, 0);
    const std::vector<int64_t> transformed = detail::dims_arg(call, 1, ndim, /*empty_means_all=*/false);
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    for (int64_t d = 0; d < ndim; ++d) {
      if (std::find(transformed.begin(), transformed.end(), d) == transformed.end()) {
        candidates.push_back(detail::every_tensor_as(call, Shard(d)));
      }
    }
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg}) candidates.push_back(detail::every_tensor_as(call, Partial(op)));
    return candidates;
  };
}

}  // namespace

void register_fft_rules(ShardingRegistry& registry) {
  registry.add({"aten::_fft_r2c", "aten::_fft_c2r", "aten::_fft_c2c"},
               detail::single_dim_rule(fft_rule(), {false, detail::no_empty_pieces_check(/*batch_may_be_empty=*/false)}));
}

}  // namespace dtensor
