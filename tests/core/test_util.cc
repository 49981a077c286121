// Helpers shared by the DTensor tests.
#include "tests/core/test_util.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <sstream>

#include "core/redistribute.h"
#include "layout/shard_layout.h"

namespace dtensor::testing {

Placements without_partial(const Placements& placements) {
  Placements out = placements;
  for (auto& p : out) {
    if (p.is_partial()) p = Replicate();
  }
  return out;
}

at::Tensor expected_local(const at::Tensor& global, const DTensorSpec& spec) {
  // Spans, not one offset: a _StridedShard rank holds several pieces of a dim.
  const std::vector<std::vector<ChunkSpan>> spans =
      local_spans(spec.meta.shape, spec.mesh.mesh_shape(), spec.placements, spec.mesh.get_coordinate());
  at::Tensor out = global;
  for (size_t d = 0; d < spans.size(); ++d) {
    std::vector<at::Tensor> pieces;
    for (const ChunkSpan& span : spans[d]) pieces.push_back(out.narrow(static_cast<int64_t>(d), span.offset, span.size));
    out = pieces.size() == 1 ? pieces[0] : at::cat(pieces, static_cast<int64_t>(d));
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
