// memcpy on CPU (ATen copies elsewhere), and reductions in rank order: tiled,
// with plain loops for the common dtypes and ATen kernels for the others.
#include "backends/fake/data_movement.h"

#include <ATen/ops/add.h>
#include <ATen/ops/div.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/mul.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

namespace dtensor {
namespace detail {

// Note [Fixed reduction order]
// A fake reduction evaluates ((x0 op x1) op x2) ... op x(n-1) over the group
// ranks in group order, element by element, with one rounding per operation:
// exactly what a serial reference computes with ATen's add/mul/maximum/
// minimum on whole tensors, so results are bit-identical to it and across
// runs, whatever the thread timing. kAvg is that sum divided by n (as
// Tensor::div_ with an integer scalar), like c10d's AVG on a backend that sums
// first. Two caveats, inherited from ATen, whose own scalar and vector loops
// disagree there: max/min of +0 and -0 may return either zero, and NaN
// payloads are not preserved.
//
// How: the range is cut into tiles of fewer than 32768 elements, aligned to
// 256 bytes. Per tile, all n sources are combined while the partial result
// stays in cache. Float, double, int, long and bfloat16 use the plain loops
// below (the same operations as ATen's kernels: IEEE, and for bfloat16 float
// arithmetic rounded to bfloat16 after each operation; an ATen call costs more
// in set-up than a small tile costs to reduce); other dtypes call ATen per tile. Tiles
// below ATen's GRAIN_SIZE (32768) run on the rank's own thread instead of
// starting an OpenMP team per rank, and the alignment keeps each element in
// the same (vector or scalar) path of ATen's loops as in a whole-tensor call.

namespace {

constexpr int64_t kMaxTileElements = 32767;
#ifdef __OPTIMIZE__
constexpr int64_t kLoopMaxBytes = std::numeric_limits<int64_t>::max();
#else
// Unoptimised builds (Bazel's fastbuild) loop slower than ATen's kernels.
constexpr int64_t kLoopMaxBytes = int64_t{64} << 10;
#endif

// Floating types whose NaNs max/min must propagate, as ATen's kernels do.
template <typename T>
constexpr bool kFloatLike = std::is_floating_point_v<T> || std::is_same_v<T, c10::BFloat16>;

template <typename T>
struct Sum {
  T operator()(T a, T b) const { return a + b; }
};
template <typename T>
struct Product {
  T operator()(T a, T b) const { return a * b; }
};
template <typename T>
struct Max {
  T operator()(T a, T b) const {
    if constexpr (kFloatLike<T>) {
      if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
    }
    return a < b ? b : a;  // std::max, as ATen's scalar loop
  }
};
template <typename T>
struct Min {
  T operator()(T a, T b) const {
    if constexpr (kFloatLike<T>) {
      if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
    }
    return b < a ? b : a;  // std::min, as ATen's scalar loop
  }
};

template <typename T, template <typename> class Op>
void reduce_loop(Slice out, c10::ArrayRef<Slice> srcs, int64_t n) {
  const Op<T> op;
  T* dst = reinterpret_cast<T*>(out.data());
  const T* a = reinterpret_cast<const T*>(srcs[0].data());
  const T* b = reinterpret_cast<const T*>(srcs[1].data());
  for (int64_t i = 0; i < n; ++i) dst[i] = op(a[i], b[i]);
  for (size_t k = 2; k < srcs.size(); ++k) {
    const T* c = reinterpret_cast<const T*>(srcs[k].data());
    for (int64_t i = 0; i < n; ++i) dst[i] = op(dst[i], c[i]);
  }
}

template <typename T>
void reduce_loop(Slice out, c10::ArrayRef<Slice> srcs, int64_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return reduce_loop<T, Sum>(out, srcs, n);
    case ReduceOp::kAvg:
      reduce_loop<T, Sum>(out, srcs, n);
      if constexpr (kFloatLike<T>) {
        T* dst = reinterpret_cast<T*>(out.data());
        const T divisor = static_cast<T>(srcs.size());
        for (int64_t i = 0; i < n; ++i) dst[i] = dst[i] / divisor;
      }
      return;
    case ReduceOp::kProduct:
      return reduce_loop<T, Product>(out, srcs, n);
    case ReduceOp::kMax:
      return reduce_loop<T, Max>(out, srcs, n);
    case ReduceOp::kMin:
      return reduce_loop<T, Min>(out, srcs, n);
  }
}

// The loop path of one tile; false when the dtype has none.
bool try_reduce_loop(Slice out, c10::ArrayRef<Slice> srcs, int64_t n, c10::ScalarType dtype,
                     ReduceOp op) {
  switch (dtype) {
    case at::kFloat:
      reduce_loop<float>(out, srcs, n, op);
      return true;
    case at::kDouble:
      reduce_loop<double>(out, srcs, n, op);
      return true;
    case at::kInt:
      reduce_loop<int32_t>(out, srcs, n, op);
      return true;
    case at::kLong:
      reduce_loop<int64_t>(out, srcs, n, op);
      return true;
    case at::kBFloat16:
      reduce_loop<c10::BFloat16>(out, srcs, n, op);
      return true;
    default:
      return false;
  }
}

void apply(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      at::add_out(out, a, b);
      return;
    case ReduceOp::kProduct:
      at::mul_out(out, a, b);
      return;
    case ReduceOp::kMax:
      at::maximum_out(out, a, b);
      return;
    case ReduceOp::kMin:
      at::minimum_out(out, a, b);
      return;
  }
  TORCH_INTERNAL_ASSERT(false, "unknown ReduceOp");
}

// The ATen path of one tile.
void reduce_aten(Slice out, c10::ArrayRef<Slice> srcs, int64_t n, c10::ScalarType dtype,
                 ReduceOp op) {
  // Ranks on other GPUs (round-robin fake worlds): their piece is copied to
  // this rank's device first (ATen's cross-device copy keeps stream order).
  auto view = [&](const Slice& s) {
    at::Tensor piece = flat_view(*s.owner, s.offset, n, dtype);
    return piece.device() == out.owner->device() ? piece : piece.to(out.owner->device());
  };
  at::Tensor result = flat_view(*out.owner, out.offset, n, dtype);
  apply(result, view(srcs[0]), view(srcs[1]), op);
  for (size_t k = 2; k < srcs.size(); ++k) apply(result, result, view(srcs[k]), op);
  if (op == ReduceOp::kAvg) result.div_(static_cast<int64_t>(srcs.size()));
}

char* data_bytes(const at::Tensor& t) { return static_cast<char*>(t.data_ptr()); }

}  // namespace

void copy_bytes(const at::Tensor& dst, int64_t dst_offset, const at::Tensor& src,
                int64_t src_offset, int64_t bytes) {
  if (bytes == 0) return;
  char* to = data_bytes(dst) + dst_offset;
  const char* from = data_bytes(src) + src_offset;
  if (to == from) return;
  if (dst.is_cpu() && src.is_cpu()) {
    std::memcpy(to, from, static_cast<size_t>(bytes));
    return;
  }
  flat_view(dst, dst_offset, bytes, at::kByte).copy_(flat_view(src, src_offset, bytes, at::kByte));
}

bool overlaps(const at::Tensor& a, const at::Tensor& b) {
  const int64_t a_bytes = nbytes(a);
  const int64_t b_bytes = nbytes(b);
  if (a_bytes == 0 || b_bytes == 0) return false;
  const char* a_begin = data_bytes(a);
  const char* b_begin = data_bytes(b);
  return a_begin < b_begin + b_bytes && b_begin < a_begin + a_bytes;
}

at::Tensor flat_view(const at::Tensor& owner, int64_t byte_offset, int64_t numel,
                     c10::ScalarType dtype) {
  return at::from_blob(data_bytes(owner) + byte_offset, {numel},
                       at::TensorOptions().dtype(dtype).device(owner.device()));
}

void reduce_in_order(Slice out, c10::ArrayRef<Slice> srcs, int64_t numel, c10::ScalarType dtype,
                     ReduceOp op) {
  TORCH_INTERNAL_ASSERT(!srcs.empty(), "reduce_in_order needs at least one source");
  const auto esize = static_cast<int64_t>(c10::elementSize(dtype));
  if (srcs.size() == 1) {
    // x / 1 == x exactly, so kAvg needs no division either.
    return copy_bytes(*out.owner, out.offset, *srcs[0].owner, srcs[0].offset, numel * esize);
  }
  const bool loops = out.owner->is_cpu() && numel * esize <= kLoopMaxBytes;
  const int64_t unit = std::max<int64_t>(1, 256 / esize);
  // GPU ranks: one kernel per source over the whole range (tiles exist for
  // the CPU's caches; elementwise results do not depend on them).
  const int64_t tile = out.owner->is_cpu() ? kMaxTileElements / unit * unit : std::max<int64_t>(numel, 1);
  c10::SmallVector<Slice, 8> part(srcs.begin(), srcs.end());
  for (int64_t begin = 0; begin < numel; begin += tile) {
    const int64_t count = std::min(tile, numel - begin);
    for (size_t k = 0; k < srcs.size(); ++k) part[k].offset = srcs[k].offset + begin * esize;
    const Slice target{out.owner, out.offset + begin * esize};
    if (!loops || !try_reduce_loop(target, part, count, dtype, op)) {
      reduce_aten(target, part, count, dtype, op);
    }
  }
}

}  // namespace detail
}  // namespace dtensor
