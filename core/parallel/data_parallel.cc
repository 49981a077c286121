// average_gradients: bucketed gradient all_reduce over the dp ranks.
#include "core/parallel/data_parallel.h"

#include <ATen/Functions.h>
#include <c10/util/Exception.h>

#include <map>
#include <unordered_set>
#include <vector>

#include "core/collectives.h"
#include "core/dtensor_impl.h"
#include "core/redistribution_origin.h"

namespace dtensor {

void average_gradients(torch::nn::Module& module, const DeviceMesh& dp_mesh) {
  TORCH_CHECK(dp_mesh.defined() && dp_mesh.ndim() == 1,
              "average_gradients: takes a 1-D data-parallel mesh, got ",
              dp_mesh.defined() ? dp_mesh.to_string() : std::string("an empty mesh"), "; pass mesh[\"dp\"]");
  const int64_t n = dp_mesh.size();
  if (n == 1) return;
  std::unordered_set<const c10::TensorImpl*> seen;
  std::map<c10::ScalarType, std::vector<at::Tensor>> buckets;  // local gradients, by dtype (ordered: SPMD)
  for (const at::Tensor& p : module.parameters(/*recurse=*/true)) {
    if (!seen.insert(p.unsafeGetTensorImpl()).second) continue;
    const at::Tensor& grad = p.grad();
    if (!grad.defined()) continue;
    at::Tensor local = is_dtensor(grad) ? dtensor_impl(grad)->local() : grad;
    buckets[local.scalar_type()].push_back(local);
  }
  ExplicitOriginScope origin(origin_cause::kDataParallel, "average_gradients");
  for (auto& [dtype, locals] : buckets) {
    std::vector<at::Tensor> flat;
    flat.reserve(locals.size());
    for (const at::Tensor& t : locals) flat.push_back(t.reshape({-1}));
    at::Tensor bucket = at::cat(flat);
    // sum: every backend has it (Gloo has no avg)
    collectives::all_reduce_(bucket, dp_mesh, 0, ReduceOp::kSum);
    bucket.div_(static_cast<double>(n));
    int64_t offset = 0;
    for (at::Tensor& t : locals) {
      t.copy_(bucket.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

}  // namespace dtensor
