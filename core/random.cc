// The DTensor RNG: per-thread mode, seeding of the World generator, and the
// two ways of producing a rank's random block. See Note [DTensor random modes].
#include "core/random.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/PhiloxRNGEngine.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "backends/world.h"

namespace dtensor {
namespace {

using detail::RandomDistribution;

thread_local RandomMode t_random_mode = RandomMode::kSingleDeviceExact;

at::Generator generator_for(const RandomOptions& options, const char* op) {
  at::Generator gen = options.generator ? *options.generator : require_current_world(op).generator();
  TORCH_CHECK(gen.defined() && gen.device().is_cpu(), op, ": RandomOptions::generator must be a CPU "
              "generator (values are drawn on CPU and moved to the mesh device), got ",
              gen.defined() ? gen.device().str() : std::string("an undefined generator"));
  return gen;
}

// Block [offset, offset + shape) of `full`, owning its memory.
at::Tensor block_of(const at::Tensor& full, const std::vector<int64_t>& shape,
                    const std::vector<int64_t>& offset) {
  if (full.sizes().vec() == shape) return full;
  at::Tensor block = full;
  for (size_t d = 0; d < shape.size(); ++d) {
    block = block.narrow(static_cast<int64_t>(d), offset[d], shape[d]);
  }
  return block.clone(at::MemoryFormat::Contiguous);
}

at::Tensor exact_local(RandomDistribution distribution, const DTensorSpec& spec, at::Generator gen,
                       const char* op) {
  const c10::ScalarType dtype = spec.meta.dtype;
  TORCH_CHECK(at::isFloatingType(dtype) || at::isComplexType(dtype), op, ": ", spec.to_string(),
              " has dtype ", dtype, "; random values need a floating or complex dtype");
  at::TensorOptions cpu = at::TensorOptions().dtype(dtype).device(c10::kCPU);
  at::Tensor full = distribution == RandomDistribution::kUniform
                        ? at::rand(spec.meta.shape, gen, cpu)
                        : at::randn(spec.meta.shape, gen, cpu);
  return block_of(full, spec.local_shape(), spec.global_offset());
}

// Significand bits of a uniform sample in [0, 1) that `dtype` represents
// exactly, so that no sample rounds up to 1 when cast.
int uniform_digits(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Double:
      return 53;
    case c10::ScalarType::Float:
      return 24;
    case c10::ScalarType::Half:
      return 11;
    default:
      return 8;  // BFloat16
  }
}

uint64_t bits64(at::philox_engine& engine) {
  const uint64_t hi = engine();
  return (hi << 32) | engine();
}

// The sample of global element `index` for call key `key`: one Philox4x32-10
// block (four 32-bit words) per element.
double offset_sample(RandomDistribution distribution, uint64_t key, uint64_t index, int digits) {
  at::philox_engine engine(key, /*subsequence=*/index, /*offset=*/0);
  if (distribution == RandomDistribution::kUniform) {
    return std::ldexp(static_cast<double>(bits64(engine) >> (64 - digits)), -digits);
  }
  // Box-Muller with u1 in (0, 1] and u2 in [0, 1), 53 bits each.
  const double u1 = 1.0 - std::ldexp(static_cast<double>(bits64(engine) >> 11), -53);
  const double u2 = std::ldexp(static_cast<double>(bits64(engine) >> 11), -53);
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

at::Tensor offset_local(RandomDistribution distribution, const DTensorSpec& spec, at::Generator gen,
                        const char* op) {
  const c10::ScalarType dtype = spec.meta.dtype;
  TORCH_CHECK(at::isFloatingType(dtype), op, ": ", spec.to_string(), " has dtype ", dtype,
              "; RandomMode::kOffsetBased supports floating dtypes only (use "
              "RandomMode::kSingleDeviceExact for complex values)");
  uint64_t key = 0;
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    key = gen.get<at::CPUGeneratorImpl>()->random64();
  }
  const std::vector<int64_t> shape = spec.local_shape();
  const std::vector<int64_t> offset = spec.global_offset();
  const std::vector<int64_t> strides = contiguous_strides(spec.meta.shape);
  at::Tensor out = at::empty(shape, at::TensorOptions().dtype(at::kDouble));
  const int64_t numel = out.numel();
  if (numel == 0) return out.to(dtype);
  double* data = out.data_ptr<double>();
  const int digits = uniform_digits(dtype);
  const size_t ndim = shape.size();
  const int64_t row = ndim == 0 ? 1 : shape.back();
  std::vector<int64_t> index(ndim, 0);  // local index of the current row (last dim stays 0)
  for (int64_t start = 0; start < numel; start += row) {
    int64_t base = 0;
    for (size_t d = 0; d < ndim; ++d) base += (offset[d] + index[d]) * strides[d];
    for (int64_t j = 0; j < row; ++j) {
      data[start + j] = offset_sample(distribution, key, static_cast<uint64_t>(base + j), digits);
    }
    for (size_t d = ndim > 0 ? ndim - 1 : 0; d-- > 0;) {  // dims before the last
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out.to(dtype);
}

}  // namespace

const char* random_mode_name(RandomMode mode) {
  switch (mode) {
    case RandomMode::kSingleDeviceExact:
      return "single_device_exact";
    case RandomMode::kOffsetBased:
      return "offset_based";
  }
  return "unknown";
}

RandomMode random_mode() { return t_random_mode; }

void set_random_mode(RandomMode mode) { t_random_mode = mode; }

RandomModeGuard::RandomModeGuard(RandomMode mode) : previous_(t_random_mode) { t_random_mode = mode; }

RandomModeGuard::~RandomModeGuard() { t_random_mode = previous_; }

void manual_seed(uint64_t seed) { require_current_world("dtensor::manual_seed").manual_seed(seed); }

uint64_t initial_seed() {
  at::Generator& gen = require_current_world("dtensor::initial_seed").generator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.current_seed();
}

namespace detail {

at::Tensor random_local(RandomDistribution distribution, const DTensorSpec& spec,
                        const at::TensorOptions& local_options, const RandomOptions& options,
                        const char* op) {
  TORCH_INTERNAL_ASSERT(!spec.has_partial(), op, ": random values cannot be Partial");
  if (local_options.device().is_meta()) {
    return at::empty(spec.local_shape(), local_options.dtype(spec.meta.dtype));
  }
  torch::autograd::AutoGradMode no_grad(false);
  at::Generator gen = generator_for(options, op);
  const RandomMode mode = options.mode.value_or(random_mode());
  at::Tensor local = mode == RandomMode::kSingleDeviceExact ? exact_local(distribution, spec, gen, op)
                                                            : offset_local(distribution, spec, gen, op);
  return local.to(local_options.device());
}

void exact_fill_local(RandomDistribution distribution, double a, double b, const DTensorSpec& spec,
                      const RandomOptions& options, const char* op, at::Tensor& into) {
  TORCH_INTERNAL_ASSERT(!spec.has_partial(), op, ": random values cannot be Partial");
  TORCH_INTERNAL_ASSERT(at::isFloatingType(into.scalar_type()), op, ": exact_fill_local needs a floating dtype");
  if (into.device().is_meta()) return;  // no values: nothing is drawn, the generator does not advance
  torch::autograd::AutoGradMode no_grad(false);
  at::Generator gen = generator_for(options, op);
  auto draw = [&](at::Tensor& t) {
    if (distribution == RandomDistribution::kUniform) {
      t.uniform_(a, b, gen);
    } else {
      t.normal_(a, b, gen);
    }
  };
  const bool whole = std::none_of(spec.placements.begin(), spec.placements.end(),
                                  [](const Placement& p) { return p.splits_dim(); });
  if (whole && into.device().is_cpu() && into.is_contiguous() && into.scalar_type() == spec.meta.dtype) {
    draw(into);
    return;
  }
  at::Tensor full = at::empty(spec.meta.shape, at::TensorOptions().dtype(spec.meta.dtype).device(c10::kCPU));
  draw(full);
  into.copy_(block_of(full, spec.local_shape(), spec.global_offset()));
}

}  // namespace detail
}  // namespace dtensor
