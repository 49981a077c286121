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
    at::Tensor bucket = flatten_bucket(locals);
    // sum: every backend has it (Gloo has no avg)
    collectives::all_reduce_(bucket, dp_mesh, 0, ReduceOp::kSum);
    bucket.div_(static_cast<double>(n));
    unflatten_bucket(bucket, locals);
  }
}

at::Tensor flatten_bucket(const std::vector<at::Tensor>& tensors, int64_t min_numel) {
  TORCH_CHECK(!tensors.empty() || min_numel == 0, "flatten_bucket: no tensors to take a dtype from");
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size() + 1);
  int64_t numel = 0;
  for (const at::Tensor& t : tensors) {
    TORCH_CHECK(t.scalar_type() == tensors.front().scalar_type() && t.device() == tensors.front().device(),
                "flatten_bucket: tensor ", flat.size(), " is ", t.scalar_type(), " on ", t.device(),
                ", the first is ", tensors.front().scalar_type(), " on ", tensors.front().device(),
                "; bucket each dtype and device on its own");
    flat.push_back(t.reshape({-1}));
    numel += t.numel();
  }
  if (numel < min_numel) flat.push_back(at::zeros({min_numel - numel}, tensors.front().options()));
  return flat.empty() ? at::empty({0}) : at::cat(flat);
}

void unflatten_bucket(const at::Tensor& bucket, const std::vector<at::Tensor>& tensors) {
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    TORCH_CHECK(offset + t.numel() <= bucket.numel(), "unflatten_bucket: the bucket has ", bucket.numel(),
                " elements, the tensors need more (", offset + t.numel(), " so far)");
    t.copy_(bucket.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

}  // namespace dtensor
