// memcpy on CPU (ATen copies elsewhere) and ATen element-wise kernels applied
// in rank order for reductions.
#include "backends/fake/data_movement.h"

#include <ATen/ops/add.h>
#include <ATen/ops/div.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/mul.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <limits>
#include <type_traits>

namespace dtensor {
namespace detail {

// Note [Fixed reduction order]
// A fake reduction evaluates ((x0 op x1) op x2) ... op x(n-1) over the group
// ranks in group order, with the same ATen element-wise kernels a serial
// reference would call on whole tensors. Element-wise kernels compute each
// output element from the same-index inputs only, so reducing a slice gives
// the same bits as reducing the whole tensor and slicing afterwards: results
// are bit-identical to the serial reference and across runs, whatever the
// thread timing. kAvg is the sum divided by n (Tensor::div_ with an integer
// scalar), as c10d's AVG on a backend that sums first. Two caveats, both
// inherited from ATen, whose scalar and vector loops differ there: max/min of
// +0 and -0 may return either zero, and NaN payloads are not preserved.

// Small reductions on CPU skip ATen for float, double, int and long: the
// TensorIterator set-up of one ATen call costs more than reducing a few
// kilobytes. The loops below evaluate the same IEEE operations per element as
// ATen's add/mul/maximum/minimum kernels (one rounding per operation, no
// contraction), so results keep the bits of the serial reference.
constexpr int64_t kLoopBytes = int64_t{64} << 10;

namespace {

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
    if constexpr (std::is_floating_point_v<T>) {
      if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
    }
    return a < b ? b : a;
  }
};
template <typename T>
struct Min {
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
    }
    return b < a ? b : a;
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
    case ReduceOp::kAvg:
      return reduce_loop<T, Sum>(out, srcs, n);
    case ReduceOp::kProduct:
      return reduce_loop<T, Product>(out, srcs, n);
    case ReduceOp::kMax:
      return reduce_loop<T, Max>(out, srcs, n);
    case ReduceOp::kMin:
      return reduce_loop<T, Min>(out, srcs, n);
  }
}

// The loop path of reduce_in_order; false when it does not apply.
bool try_reduce_loop(Slice out, c10::ArrayRef<Slice> srcs, int64_t n, c10::ScalarType dtype,
                     ReduceOp op) {
  if (!out.owner->is_cpu() || n * static_cast<int64_t>(c10::elementSize(dtype)) > kLoopBytes) {
    return false;
  }
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
    default:
      return false;
  }
}

char* data_bytes(const at::Tensor& t) { return static_cast<char*>(t.data_ptr()); }

void apply(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b, ReduceOp op) {
  at::Tensor result = out;  // the *_out functions take a non-const reference
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      at::add_out(result, a, b);
      return;
    case ReduceOp::kProduct:
      at::mul_out(result, a, b);
      return;
    case ReduceOp::kMax:
      at::maximum_out(result, a, b);
      return;
    case ReduceOp::kMin:
      at::minimum_out(result, a, b);
      return;
  }
  TORCH_INTERNAL_ASSERT(false, "unknown ReduceOp");
}

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
  const int64_t bytes = numel * static_cast<int64_t>(c10::elementSize(dtype));
  if (srcs.size() == 1) {
    // x / 1 == x exactly, so kAvg needs no division either.
    return copy_bytes(*out.owner, out.offset, *srcs[0].owner, srcs[0].offset, bytes);
  }
  auto view = [&](const Slice& s) { return flat_view(*s.owner, s.offset, numel, dtype); };
  const int64_t n = static_cast<int64_t>(srcs.size());
  if (try_reduce_loop(out, srcs, numel, dtype, op)) {
    if (op == ReduceOp::kAvg) view(out).div_(n);
    return;
  }
  at::Tensor result = view(out);
  apply(result, view(srcs[0]), view(srcs[1]), op);
  for (size_t k = 2; k < srcs.size(); ++k) apply(result, result, view(srcs[k]), op);
  if (op == ReduceOp::kAvg) result.div_(n);
}

}  // namespace detail
}  // namespace dtensor
