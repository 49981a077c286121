// DTensor methods and their autograd nodes. Each differentiable entry point
// computes its result without autograd, then attaches a backward node that
// performs the conjugate redistribution (DESIGN.md decision 4).
#include "core/dtensor.h"

#include <ATen/Functions.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <sstream>

#include "backends/async_region.h"
#include "core/dtensor_impl.h"
#include "core/collectives.h"
#include "core/compat/autograd_node.h"
#include "core/init.h"
#include "core/torch_errors.h"
#include "layout/shard_layout.h"
#include "layout/strides.h"
#include "core/redistribute.h"
#include "core/redistribution_origin.h"

namespace dtensor {
namespace {

using torch::autograd::variable_list;

// Placements a gradient takes on its way back: Partial becomes Replicate
// (P->R forward => R->R backward), everything else is kept.
Placements gradient_placements(const Placements& forward) {
  Placements out = forward;
  for (auto& p : out) {
    if (p.is_partial()) p = Replicate();
  }
  return out;
}

// Note [Partial gradients of a redistribute]
// The gradient of redistribute is laid out like the forward input, with one
// exception taken from PyTorch 2.11's Redistribute.backward: on a mesh dim
// where the input was Partial and the gradient arrives Partial, the gradient
// stays Partial (no all_reduce; whoever needs it whole reduces it later,
// once). A Shard or Replicate gradient there becomes Replicate. From
// from_local and to_local the gradient is always Replicate there
// (gradient_placements), as in PyTorch.
Placements redistribute_gradient_placements(const Placements& forward, const Placements& gradient) {
  Placements out = gradient_placements(forward);
  for (size_t d = 0; d < out.size() && d < gradient.size(); ++d) {
    if (forward[d].is_partial() && gradient[d].is_partial()) out[d] = gradient[d];
  }
  return out;
}

// Global strides that follow the layout of this rank's `local` piece. A
// contiguous local gives contiguous global strides on every rank: ordering by
// the local's strides would be rank-dependent where a rank's piece has a
// size-1 or empty dim (its strides do not fix an order), and ranks whose
// global strides differ take different paths later (AccumulateGrad's layout
// contract kept a Partial gradient on some ranks and copied it to Replicate
// on others: RedistributeGradientTest.PartialKeptBesideANestedShard).
std::vector<int64_t> global_strides_like(const std::vector<int64_t>& global_shape, const at::Tensor& local) {
  return local.is_contiguous() ? contiguous_strides(global_shape)
                               : dense_strides_ordered_like(global_shape, local.strides().vec());
}

// Note [Global strides after a collective]
// A collective returns a new, contiguous local tensor whatever the layout of
// its input (a reduce_scatter of a transposed Partial gradient, an
// all_gather of a transposed shard). The global strides then follow the new
// local's layout, as our to_local backward and PyTorch's from_local
// (compute_global_tensor_info) derive them. Kept from the input (PyTorch's
// Redistribute keeps the input's tensor_meta), they would claim a transposed
// tensor, and a later view (aten::view, _reshape_alias) would be planned, or
// refused, for a layout the local tensor does not have.
// The choice must not depend on this rank's piece: a slice (Replicate ->
// Shard) is a view where the narrowed piece happens to be contiguous, and an
// empty or size-1 piece is contiguous whatever its strides, so "is the
// output a view of the input" differs between ranks of one uneven tensor.
// Ranks with different global strides then take different paths (an
// expanded gradient sliced to an uneven shard: AccumulateGrad stole it on
// the rank holding the row and copied it, with an all_gather, on the ranks
// holding none; differential program g18_01824). So any redistribution that
// changes placements returns a contiguous local with contiguous global
// strides on every rank; one that changes none keeps the input's.
at::Tensor redistribute_dtensor_no_grad(const at::Tensor& t, const Placements& to,
                                        std::optional<c10::ScalarType> dtype) {
  DTensorImpl* impl = dtensor_impl(t);
  at::Tensor local = impl->local();
  DTensorSpec spec = impl->spec();
  if (dtype && *dtype != spec.meta.dtype) {
    local = local.to(*dtype);
    spec.meta.dtype = *dtype;
  }
  at::Tensor out = redistribute_local(local, spec, to);
  DTensorSpec out_spec = spec.with_placements(to);
  if (to != spec.placements) {  // See Note [Global strides after a collective].
    if (!out.is_contiguous()) out = out.contiguous();
    out_spec.meta.stride = contiguous_strides(out_spec.meta.shape);
  }
  return make_dtensor(out, out_spec);
}

struct RedistributeBackward : torch::autograd::Node {
  Placements forward;  // the input's placements; See Note [Partial gradients of a redistribute]
  CapturedOrigin origin;  // the explicit API that called redistribute, if any
  std::optional<c10::ScalarType> backward_dtype;
  c10::ScalarType input_dtype;
  std::string name() const override { return "dtensor::RedistributeBackward"; }
  variable_list apply(variable_list&& grads) override {
    if (!grads[0].defined()) return {at::Tensor()};
    TORCH_CHECK(is_dtensor(grads[0]), "RedistributeBackward: the gradient is not a DTensor");
    BackwardOriginScope scope(origin, origin_cause::kRedistributeBackward, "DTensor::redistribute backward");
    const Placements to = redistribute_gradient_placements(forward, dtensor_impl(grads[0])->spec().placements);
    at::Tensor g = redistribute_dtensor_no_grad(grads[0], to, backward_dtype);
    if (DTensorImpl* impl = dtensor_impl(g); impl->spec().meta.dtype != input_dtype) {
      g = redistribute_dtensor_no_grad(g, to, input_dtype);
    }
    return {g};
  }
};

// Gradient of from_local: the DTensor gradient, laid out like the forward
// input, as a local tensor.
struct FromLocalBackward : torch::autograd::Node {
  Placements target;
  CapturedOrigin origin;  // the explicit API that called from_local (a TP style), if any
  std::string name() const override { return "dtensor::FromLocalBackward"; }
  variable_list apply(variable_list&& grads) override {
    if (!grads[0].defined()) return {at::Tensor()};
    at::Tensor g = grads[0];
    if (is_dtensor(g)) {
      BackwardOriginScope scope(origin, origin_cause::kFromLocalBackward, "DTensor::from_local backward");
      g = dtensor_impl(redistribute_dtensor_no_grad(g, target, std::nullopt))->local();
    }
    return {g};
  }
};

// Gradient of to_local: the local gradient wrapped with the forward's global
// metadata and the requested gradient placements.
struct ToLocalBackward : torch::autograd::Node {
  DTensorSpec grad_spec;
  std::string name() const override { return "dtensor::ToLocalBackward"; }
  variable_list apply(variable_list&& grads) override {
    if (!grads[0].defined()) return {at::Tensor()};
    TORCH_CHECK(!is_dtensor(grads[0]), "ToLocalBackward: the gradient of a local tensor is a DTensor");
    // The global strides follow the local gradient's layout (as PyTorch's
    // compute_global_tensor_info does), not the forward's: a gradient that
    // arrives transposed must not claim contiguous global strides, or later
    // view ops would plan views the local tensor cannot take.
    DTensorSpec spec = grad_spec;
    spec.meta.stride = global_strides_like(spec.meta.shape, grads[0]);
    return {make_dtensor(grads[0], spec)};
  }
};

// NodePtr: compat::AutogradNodePtr of a node type.
template <typename NodePtr>
void attach(const at::Tensor& input, at::Tensor& output, const NodePtr& node) {
  node->set_next_edges(torch::autograd::collect_next_edges(input));
  torch::autograd::set_history(output, node);
}

bool needs_grad(const at::Tensor& input) {
  return torch::autograd::GradMode::is_enabled() && input.requires_grad();
}

std::vector<int64_t> even_global_shape(const at::Tensor& local, const DeviceMesh& mesh,
                                       const Placements& placements) {
  return rethrow_as_torch_error(
      [&] { return global_shape_from_even_local(local.sizes().vec(), mesh.mesh_shape(), placements); },
      "DTensor::from_local on rank ", mesh.global_rank());
}

// `row` of every rank of `mesh`: all_gather along each mesh dim in turn, so
// every rank ends with the same table (one row per rank, equal widths).
std::vector<std::vector<int64_t>> gather_rows_from_all(const std::vector<int64_t>& row,
                                                      const DeviceMesh& mesh) {
  const auto int64 = at::TensorOptions().dtype(at::kLong).device(mesh.device());
  at::Tensor rows = at::tensor(row, int64).unsqueeze(0);
  for (int i = 0; i < mesh.ndim(); ++i) {
    rows = collectives::all_gather_dim(rows, mesh, i, 0, rows.size(0) * mesh.size(i));
  }
  rows = rows.cpu().contiguous();
  const int64_t* data = rows.data_ptr<int64_t>();
  std::vector<std::vector<int64_t>> table;
  for (int64_t r = 0; r < rows.size(0); ++r) {
    table.emplace_back(data + r * rows.size(1), data + (r + 1) * rows.size(1));
  }
  return table;
}

// Note [from_local run_check]
// FromLocalOptions::run_check, as PyTorch's from_local(run_check=True), plus
// the shape check PyTorch leaves undone: every rank of the mesh gathers
// every rank's (dims, dtype), then every rank's (local shape, global shape),
// so all ranks reach the same verdict and raise the same error (no rank is
// left waiting in a collective); then, for each Replicate mesh dim, the data
// of the first rank along that dim is broadcast to the others. Returns the
// local tensor to wrap (the broadcast result where there is a Replicate).
at::Tensor run_from_local_check(const at::Tensor& local, const DeviceMesh& mesh,
                                const Placements& placements, const std::vector<int64_t>& shape) {
  const std::string where =
      c10::str("DTensor::from_local(run_check) with ", to_string(placements), " on ",
               mesh.to_string(), ", rank ", mesh.global_rank());
  at::NoGradGuard no_grad;
  ExplicitOriginScope origin(origin_cause::kRunCheck, "DTensor::from_local(run_check)");
  // Rows: [rank, dims, dtype].
  const auto heads = gather_rows_from_all(
      {mesh.global_rank(), local.dim(), static_cast<int64_t>(local.scalar_type())}, mesh);
  for (const auto& head : heads) {
    if (head[1] == heads[0][1] && head[2] == heads[0][2]) continue;
    auto describe = [](const std::vector<int64_t>& h) {
      return c10::str("rank ", h[0], " has a ", h[1], "-D ", static_cast<c10::ScalarType>(h[2]),
                      " tensor");
    };
    TORCH_CHECK(false, where, ": ranks disagree on the local tensor: ", describe(heads[0]), ", ",
                describe(head), "; every rank must pass a local tensor of the same dims and dtype");
  }
  // Rows: [rank, local shape..., global shape...].
  const auto ndim = static_cast<size_t>(local.dim());
  std::vector<int64_t> mine = {mesh.global_rank()};
  for (int64_t d = 0; d < local.dim(); ++d) mine.push_back(local.size(d));
  mine.insert(mine.end(), shape.begin(), shape.end());
  const auto rows = gather_rows_from_all(mine, mesh);
  auto global_of = [&](const std::vector<int64_t>& row) {
    return c10::IntArrayRef(row).slice(1 + ndim, ndim);
  };
  for (const auto& row : rows) {
    if (global_of(row) == global_of(rows[0])) continue;
    auto describe = [&](const std::vector<int64_t>& r) {
      return c10::str("rank ", r[0], " has local ", c10::IntArrayRef(r).slice(1, ndim),
                      " (global ", global_of(r), ")");
    };
    TORCH_CHECK(false, where, ": ranks disagree on the global shape: ", describe(rows[0]), ", ",
                describe(row), "; pass local tensors of one global tensor, and for uneven shards ",
                "the global shape in FromLocalOptions::shape");
  }
  at::Tensor out = local;
  for (int i = 0; i < mesh.ndim(); ++i) {
    if (placements[static_cast<size_t>(i)].is_replicate() && mesh.size(i) > 1) {
      out = collectives::broadcast(out, mesh, i, /*root=*/0);
    }
  }
  return out;
}

}  // namespace

DTensor::DTensor(at::Tensor t) : at::Tensor(std::move(t)) {
  TORCH_CHECK(is_dtensor(*this), "DTensor: the tensor ",
              defined() ? std::string(toString()) : std::string("(undefined)"),
              " is not a DTensor; create one with distribute_tensor or DTensor::from_local");
}

const DTensorSpec& DTensor::spec() const { return dtensor_impl(*this)->spec(); }
const at::Tensor& DTensor::local_tensor() const { return dtensor_impl(*this)->local(); }

DTensor DTensor::from_local(const at::Tensor& local, const DeviceMesh& mesh, Placements placements,
                            const FromLocalOptions& options) {
  init();
  TORCH_CHECK(!is_dtensor(local), "DTensor::from_local: the local tensor is already a DTensor");
  placements = checked_placements(placements, mesh, local.dim(), "DTensor::from_local");
  std::vector<int64_t> shape = options.shape ? *options.shape : even_global_shape(local, mesh, placements);
  std::vector<int64_t> stride = options.stride ? *options.stride : contiguous_strides(shape);
  // See Note [from_local run_check]; before the per-rank checks below, so
  // that every rank enters its collectives.
  const at::Tensor data = options.run_check ? run_from_local_check(local, mesh, placements, shape) : local;
  DTensorSpec spec{mesh, placements, TensorMeta{shape, stride, local.scalar_type()}};
  TORCH_CHECK(spec.local_shape() == local.sizes().vec(), "DTensor::from_local on rank ",
              mesh.global_rank(), ": local shape ", local.sizes(), " does not match global shape ",
              c10::IntArrayRef(shape), " under ", dtensor::to_string(placements), " on ", mesh.to_string(),
              " (expected local ", c10::IntArrayRef(spec.local_shape()), ")");
  at::Tensor out;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    out = make_dtensor(data.alias(), spec);
  }
  Placements grad_target = gradient_placements(placements);
  if (options.grad_placements) {
    grad_target = checked_placements(*options.grad_placements, mesh, spec.ndim(), "DTensor::from_local");
    const std::vector<int64_t> grad_local = spec.with_placements(grad_target).local_shape();
    TORCH_CHECK(grad_local == local.sizes().vec(), "DTensor::from_local on rank ", mesh.global_rank(),
                ": grad_placements ", dtensor::to_string(grad_target), " give this rank a gradient of shape ",
                c10::IntArrayRef(grad_local), " but the local tensor is ", local.sizes(), " (placements ",
                dtensor::to_string(placements), ", global shape ", c10::IntArrayRef(shape), " on ",
                mesh.to_string(), "); choose grad_placements that lay the gradient out like the local tensor");
  }
  if (needs_grad(local)) {
    auto node = compat::make_autograd_node<FromLocalBackward>();
    node->target = std::move(grad_target);
    node->origin = CapturedOrigin::capture();
    attach(local, out, node);
  }
  return DTensor(out);
}

at::Tensor DTensor::to_local(std::optional<Placements> grad_placements) const {
  const DTensorSpec& s = spec();
  at::Tensor out;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    out = local_tensor().alias();
  }
  if (needs_grad(*this)) {
    auto node = compat::make_autograd_node<ToLocalBackward>();
    node->grad_spec = s.with_placements(
        grad_placements ? checked_placements(*grad_placements, s.mesh, s.ndim(), "DTensor::to_local")
                        : gradient_placements(s.placements));
    attach(*this, out, node);
  }
  return out;
}

namespace {

// Note [Redistribute to Partial is internal]
// As in PyTorch 2.15's DTensor.redistribute, the public API makes a NEW
// Partial on a mesh dim only from a Shard and only P(sum): the local zero-fill
// of Note [Placement transitions] (layout/transitions.h). Replicate -> Partial
// (which divides values by the group size) and the other reduce ops are for
// sharding propagation and backward passes, which go through
// redistribute_local / redistribute_dtensor_no_grad. Keeping an existing
// Partial unchanged on a mesh dim ([P, S(0)] -> [P, S(1)]) is allowed.
// (PyTorch 2.11 refused Shard -> Partial(sum) too.)
void check_no_new_partial(const DTensorSpec& s, const Placements& to) {
  for (size_t i = 0; i < to.size(); ++i) {
    if (!to[i].is_partial() || s.placements[i] == to[i]) continue;
    if (s.placements[i].is_shard() && to[i].reduce_op() == ReduceOp::kSum) continue;
    TORCH_CHECK(false, "DTensor::redistribute on rank ", s.mesh.global_rank(), ": can not redistribute ",
                c10::toString(s.meta.dtype), c10::IntArrayRef(s.meta.shape), " on ", s.mesh.to_string(),
                " from ", dtensor::to_string(s.placements), " to ", dtensor::to_string(to), ": mesh dim ", i,
                " would become ", to[i].to_string(), " (was ", s.placements[i].to_string(),
                "); only Shard to Partial(sum) redistribution is supported (as in PyTorch). "
                "Keep the existing Partial on that dim, redistribute to Replicate or Shard, or "
                "make the Partial(sum) from a Shard");
  }
}

}  // namespace

DTensor DTensor::redistribute(Placements placements, const RedistributeOptions& options) const {
  const DTensorSpec& s = spec();
  placements = checked_placements(placements, s.mesh, s.ndim(), "DTensor::redistribute");
  check_no_new_partial(s, placements);
  // Before this call's own frame: the backward names the API that called
  // redistribute (full_tensor, a TP style), else redistribute itself.
  CapturedOrigin caller = needs_grad(*this) ? CapturedOrigin::capture() : CapturedOrigin{};
  ExplicitOriginScope origin(origin_cause::kRedistribute, "DTensor::redistribute", /*weak=*/true);
  at::Tensor out;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    torch::autograd::AutoGradMode no_grad(false);
    // Note [Async redistribution]: on a device with streams the work moves
    // to a side stream and `out` waits for it at its first read; elsewhere
    // there is no region and it runs here and now.
    const at::Tensor& input = dtensor_impl(*this)->local();
    std::unique_ptr<AsyncRegion> region = options.async_op ? begin_async_region(input.device(), {input}) : nullptr;
    out = redistribute_dtensor_no_grad(*this, placements, options.forward_dtype);
    if (region) {
      DTensorImpl* result = dtensor_impl(out);
      result->set_pending(region->finish({result->local()}));
    }
  }
  if (needs_grad(*this)) {
    auto node = compat::make_autograd_node<RedistributeBackward>();
    node->forward = s.placements;
    node->backward_dtype = options.backward_dtype;
    node->origin = std::move(caller);
    node->input_dtype = s.meta.dtype;
    attach(*this, out, node);
  }
  return DTensor(out);
}

at::Tensor DTensor::full_tensor(std::optional<Placements> grad_placements) const {
  Placements replicate(static_cast<size_t>(device_mesh().ndim()), Replicate());
  ExplicitOriginScope origin(origin_cause::kFullTensor, "DTensor::full_tensor");
  return redistribute(replicate).to_local(std::move(grad_placements));
}

std::string DTensor::to_string() const {
  std::ostringstream out;
  const DTensorSpec& s = spec();
  out << "DTensor(placements=" << dtensor::to_string(s.placements) << ", mesh=" << s.mesh.to_string()
      << ", shape=" << c10::IntArrayRef(s.meta.shape) << ", dtype=" << c10::toString(s.meta.dtype)
      << ", rank=" << s.mesh.global_rank() << ", local=\n"
      << local_tensor() << ")";
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const DTensor& t) { return out << t.to_string(); }

}  // namespace dtensor
