// Helpers shared by the DTensor tests.
#include "tests/core/test_util.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <sstream>

#include "core/redistribute.h"

namespace dtensor::testing {

Placements without_partial(const Placements& placements) {
  Placements out = placements;
  for (auto& p : out) {
    if (p.is_partial()) p = Replicate();
  }
  return out;
}

at::Tensor expected_local(const at::Tensor& global, const DTensorSpec& spec) {
  std::vector<int64_t> shape = spec.local_shape();
  std::vector<int64_t> offset = spec.global_offset();
  at::Tensor out = global;
  for (size_t d = 0; d < shape.size(); ++d) {
    out = out.narrow(static_cast<int64_t>(d), offset[d], shape[d]);
  }
  return out;
}

at::Tensor seeded_randn(const std::vector<int64_t>& shape, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn(shape, gen, at::kDouble);
}

std::string trace(const Placements& from, const Placements& to, const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << to_string(from) << " -> " << to_string(to) << " shape " << c10::IntArrayRef(shape);
  return out.str();
}

bool public_redistribute_refuses(const Placements& from, const Placements& to) {
  for (size_t i = 0; i < to.size(); ++i) {
    if (!to[i].is_partial() || from[i] == to[i]) continue;
    if (!(from[i].is_shard() && to[i].reduce_op() == ReduceOp::kSum)) return true;
  }
  return false;
}

DTensor redistribute_or_internal(const DTensor& x, const Placements& to) {
  if (!public_redistribute_refuses(x.placements(), to)) return x.redistribute(to);
  EXPECT_THROW(x.redistribute(to), c10::Error);
  FromLocalOptions options;
  options.shape = x.spec().meta.shape;
  options.stride = x.spec().meta.stride;
  return DTensor::from_local(redistribute_local(x.local_tensor(), x.spec(), to), x.device_mesh(), to,
                             options);
}

}  // namespace dtensor::testing
