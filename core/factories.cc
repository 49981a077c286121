// DTensor factories: validate the arguments once, build the spec, materialise
// this rank's block only. See Note [DTensor factory arguments].
#include "core/factories.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DefaultDtype.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <sstream>
#include <string>

#include "core/dtensor_impl.h"
#include "core/init.h"
#include "core/torch_errors.h"

namespace dtensor {
namespace {

// What a factory needs once its arguments are checked.
struct FactoryPlan {
  DTensorSpec spec;
  at::TensorOptions local_options;  // device, dtype; never requires_grad
  bool requires_grad = false;
};

// "dtensor::ones(size=[5, 3], placements=[S(0)], mesh=DeviceMesh(cpu, (4)), rank 2)".
std::string describe(const char* op, const std::vector<int64_t>& size, const DeviceMesh& mesh,
                     const Placements& placements) {
  std::ostringstream out;
  out << op << "(size=" << c10::IntArrayRef(size) << ", placements=" << to_string(placements)
      << ", mesh=" << mesh.to_string() << ", rank " << mesh.global_rank() << ")";
  return out.str();
}

void check_options(const std::string& where, const DeviceMesh& mesh, const at::TensorOptions& options,
                   c10::ScalarType dtype) {
  TORCH_CHECK(options.layout() == c10::kStrided, where, ": only the strided layout is supported, got ",
              options.layout());
  TORCH_CHECK(!options.has_memory_format() ||
                  *options.memory_format_opt() == c10::MemoryFormat::Contiguous,
              where, ": only the contiguous memory format is supported");
  if (options.has_device()) {
    const c10::Device device = options.device();
    TORCH_CHECK(device.type() == mesh.device_type() &&
                    (!device.has_index() || device == mesh.device()),
                where, ": options ask for device ", device, " but the mesh's device on this rank is ",
                mesh.device(), "; leave the device out (DTensor factories use the mesh's device)");
  }
  TORCH_CHECK(!options.requires_grad() || at::isFloatingType(dtype) || at::isComplexType(dtype), where,
              ": requires_grad needs a floating or complex dtype, got ", dtype);
}

FactoryPlan plan_factory(const char* op, const std::vector<int64_t>& size, const DeviceMesh& mesh,
                         Placements placements, const at::TensorOptions& options, c10::ScalarType dtype,
                         bool allow_partial) {
  init();
  TORCH_CHECK(mesh.defined(), op, ": the mesh is empty; build one with DeviceMesh::init");
  const std::string where = describe(op, size, mesh, placements);
  for (size_t d = 0; d < size.size(); ++d) {
    TORCH_CHECK(size[d] >= 0, where, ": size ", size[d], " of dim ", d, " is negative");
  }
  placements = rethrow_as_torch_error(
      [&] { return validate_placements(placements, mesh.mesh_shape(), static_cast<int64_t>(size.size())); },
      where);
  for (const Placement& p : placements) {
    TORCH_CHECK(allow_partial || !p.is_partial(), where, ": ", p.to_string(),
                " is not a valid factory placement (only Shard and Replicate; zeros also accepts "
                "Partial); create the tensor with Replicate() and redistribute it, or build partial "
                "values with DTensor::from_local");
  }
  check_options(where, mesh, options, dtype);
  TensorMeta meta{size, contiguous_strides(size), dtype};
  return FactoryPlan{DTensorSpec{mesh, std::move(placements), std::move(meta)},
                     at::TensorOptions().dtype(dtype).device(mesh.device()), options.requires_grad()};
}

DTensor finish(const FactoryPlan& plan, at::Tensor local) {
  TORCH_INTERNAL_ASSERT(local.sizes().vec() == plan.spec.local_shape() &&
                            local.scalar_type() == plan.spec.meta.dtype,
                        "factory built a local tensor ", local.sizes(), " ", local.scalar_type(),
                        " for ", plan.spec.to_string());
  at::Tensor out = make_dtensor(std::move(local), plan.spec);
  if (plan.requires_grad) out.set_requires_grad(true);
  return DTensor(out);
}

c10::ScalarType dtype_of(const at::TensorOptions& options) {
  return c10::typeMetaToScalarType(options.dtype());
}

// at::full's dtype inference when no dtype is given.
c10::ScalarType full_dtype(const at::Scalar& fill_value, const at::TensorOptions& options) {
  if (options.has_dtype()) return dtype_of(options);
  if (fill_value.isBoolean()) return c10::kBool;
  if (fill_value.isIntegral(/*includeBool=*/false)) return c10::kLong;
  if (fill_value.isComplex()) return c10::typeMetaToScalarType(c10::get_default_complex_dtype());
  return c10::get_default_dtype_as_scalartype();
}

template <typename MakeLocal>
DTensor make(const char* op, const std::vector<int64_t>& size, const DeviceMesh& mesh,
             Placements placements, const at::TensorOptions& options, c10::ScalarType dtype,
             bool allow_partial, MakeLocal make_local) {
  FactoryPlan plan = plan_factory(op, size, mesh, std::move(placements), options, dtype, allow_partial);
  at::Tensor local;
  {
    torch::autograd::AutoGradMode no_grad(false);
    local = make_local(plan);
  }
  return finish(plan, std::move(local));
}

DTensor make_random(const char* op, detail::RandomDistribution distribution,
                    const std::vector<int64_t>& size, const DeviceMesh& mesh, Placements placements,
                    const at::TensorOptions& options, const RandomOptions& random) {
  return make(op, size, mesh, std::move(placements), options, dtype_of(options),
              /*allow_partial=*/false, [&](const FactoryPlan& plan) {
                return detail::random_local(distribution, plan.spec, plan.local_options, random, op);
              });
}

// The local part of PyTorch 2.15's linspace / logspace (_linspace_local_tensor):
// the first local value is start + offset * step, so every rank computes the
// values PyTorch computes on that rank.
template <typename Spaced>
DTensor spaced(const char* op, double start, double end, int64_t steps, const DeviceMesh& mesh,
               Placements placements, const at::TensorOptions& options, Spaced spaced_op) {
  TORCH_CHECK(steps >= 0, op, ": steps must be >= 0, got ", steps);
  return make(op, {steps}, mesh, std::move(placements), options, dtype_of(options),
              /*allow_partial=*/false, [&](const FactoryPlan& plan) {
                const int64_t local_steps = plan.spec.local_shape()[0];
                const int64_t offset = plan.spec.global_offset()[0];
                double local_start = start, local_end = end;
                if (local_steps > 0 && steps > 1) {
                  const double step = (end - start) / static_cast<double>(steps - 1);
                  local_start = start + static_cast<double>(offset) * step;
                  local_end = local_start + step * static_cast<double>(local_steps - 1);
                } else if (local_steps > 0) {
                  local_end = start;
                }
                return spaced_op(local_start, local_end, local_steps, plan.local_options);
              });
}

}  // namespace

DTensor linspace(double start, double end, int64_t steps, const DeviceMesh& mesh, Placements placements,
                 const at::TensorOptions& options) {
  return spaced("dtensor::linspace", start, end, steps, mesh, std::move(placements), options,
                [](double a, double b, int64_t k, const at::TensorOptions& o) { return at::linspace(a, b, k, o); });
}

DTensor logspace(double start, double end, int64_t steps, double base, const DeviceMesh& mesh,
                 Placements placements, const at::TensorOptions& options) {
  return spaced("dtensor::logspace", start, end, steps, mesh, std::move(placements), options,
                [base](double a, double b, int64_t k, const at::TensorOptions& o) {
                  return at::logspace(a, b, k, base, o);
                });
}

DTensor zeros(const std::vector<int64_t>& size, const DeviceMesh& mesh, Placements placements,
              const at::TensorOptions& options) {
  return make("dtensor::zeros", size, mesh, std::move(placements), options, dtype_of(options),
              /*allow_partial=*/true, [](const FactoryPlan& plan) {
                return at::zeros(plan.spec.local_shape(), plan.local_options);
              });
}

DTensor ones(const std::vector<int64_t>& size, const DeviceMesh& mesh, Placements placements,
             const at::TensorOptions& options) {
  return make("dtensor::ones", size, mesh, std::move(placements), options, dtype_of(options),
              /*allow_partial=*/false, [](const FactoryPlan& plan) {
                return at::ones(plan.spec.local_shape(), plan.local_options);
              });
}

DTensor empty(const std::vector<int64_t>& size, const DeviceMesh& mesh, Placements placements,
              const at::TensorOptions& options) {
  return make("dtensor::empty", size, mesh, std::move(placements), options, dtype_of(options),
              /*allow_partial=*/false, [](const FactoryPlan& plan) {
                return at::empty(plan.spec.local_shape(), plan.local_options);
              });
}

DTensor full(const std::vector<int64_t>& size, const at::Scalar& fill_value, const DeviceMesh& mesh,
             Placements placements, const at::TensorOptions& options) {
  return make("dtensor::full", size, mesh, std::move(placements), options,
              full_dtype(fill_value, options), /*allow_partial=*/false,
              [&](const FactoryPlan& plan) {
                return at::full(plan.spec.local_shape(), fill_value, plan.local_options);
              });
}

DTensor rand(const std::vector<int64_t>& size, const DeviceMesh& mesh, Placements placements,
             const at::TensorOptions& options, const RandomOptions& random) {
  return make_random("dtensor::rand", detail::RandomDistribution::kUniform, size, mesh,
                     std::move(placements), options, random);
}

DTensor randn(const std::vector<int64_t>& size, const DeviceMesh& mesh, Placements placements,
              const at::TensorOptions& options, const RandomOptions& random) {
  return make_random("dtensor::randn", detail::RandomDistribution::kNormal, size, mesh,
                     std::move(placements), options, random);
}

}  // namespace dtensor
