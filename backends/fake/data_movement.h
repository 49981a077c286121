// Byte copies and fixed-order reductions between the tensors of fake ranks.
// Everything works on raw byte offsets into contiguous tensors.
//   copy_bytes(output, /*dst_offset=*/j * block, peer_input, /*src_offset=*/0, block);
//   reduce_in_order(flat_view(out, 0, n, dtype), {a, b, c}, ReduceOp::kSum);  // (a + b) + c
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "layout/reduce_op.h"

namespace dtensor {
namespace detail {

/// Bytes of a contiguous tensor's data.
inline int64_t nbytes(const at::Tensor& t) {
  return static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size());
}

/// Copies `bytes` bytes from `src`'s data at byte `src_offset` to `dst`'s data
/// at byte `dst_offset`. Both tensors are contiguous and on one device; the
/// ranges must not partially overlap. Identical ranges and zero bytes are no-ops.
void copy_bytes(const at::Tensor& dst, int64_t dst_offset, const at::Tensor& src,
                int64_t src_offset, int64_t bytes);

/// True when the data of `a` and `b` share at least one byte.
bool overlaps(const at::Tensor& a, const at::Tensor& b);

/// A 1-D tensor of `numel` elements of `dtype`, `byte_offset` bytes into
/// `owner`'s data. It does not own the memory: keep `owner` alive while using it.
at::Tensor flat_view(const at::Tensor& owner, int64_t byte_offset, int64_t numel,
                     c10::ScalarType dtype);

/// Elements starting `offset` bytes into the data of a tensor the caller keeps
/// alive (`owner`).
struct Slice {
  const at::Tensor* owner = nullptr;
  int64_t offset = 0;
  char* data() const { return static_cast<char*>(owner->data_ptr()) + offset; }
};

/// out = srcs[0] op srcs[1] op ... op srcs[n-1] over `numel` elements of
/// `dtype`, strictly left to right, so that the result does not depend on
/// thread timing; kAvg is that sum divided by n. `out` may be srcs[0] or
/// srcs[1] but must not overlap any other source. See Note [Fixed reduction order].
void reduce_in_order(Slice out, c10::ArrayRef<Slice> srcs, int64_t numel, c10::ScalarType dtype,
                     ReduceOp op);

}  // namespace detail
}  // namespace dtensor
