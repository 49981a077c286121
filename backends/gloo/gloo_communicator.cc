// Collectives on c10d's ProcessGroupGloo, composing the ones Gloo 1.13 lacks,
// and the conversion of Gloo/c10d failures into dtensor's c10::Error messages.
#include "backends/gloo/gloo_communicator.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <mutex>
#include <utility>

namespace dtensor {

// Note [Composed Gloo collectives]
// ProcessGroupGloo in LibTorch 1.13 has no reduce_scatter, no
// _allgather_base, no ReduceOp::AVG, and moves only float, double, half,
// int8, uint8, int32 and int64. What it lacks is composed here:
//   all_gather_into_tensor: allgather into views of `output` (dim-0 blocks),
//     so Gloo writes the result in place;
//   reduce_scatter_tensor: all_reduce of a copy of `input`, then this rank's
//     block is copied into `output` (about twice the traffic of a ring
//     reduce-scatter; Gloo is the CPU test engine, not the fast path);
//   avg: sum, then divide by the group size;
//   other dtypes: data movement reinterprets the bytes as a Gloo dtype of the
//     same width; reductions run on a wider copy (bool as uint8 with max/min,
//     bfloat16 as float, int16 as int32, complex as pairs of reals, sum/avg
//     only) and copy the result back.
// Empty tensors skip Gloo (its allgather divides by the element count): every
// member skips alike, since these collectives need equal shapes on all ranks.
// all_to_all_single always runs: one rank's empty input says nothing of the
// others', and Gloo matches collectives by a per-group counter.
// The public Communicator method reported the collective once, before run_*:
// the pieces here call the process group directly, so they are not reported.

// Note [Gloo timeouts]
// A collective's timeout is options.timeout, or the world's when that is zero
// (c10d's own "unset" is -1 ms; a literal 0 would be taken as zero time). It is
// passed to c10d and also enforced by waiting on the c10d work for that long:
// LibTorch 2.x's Gloo honours per-collective timeouts, 1.13's applies the
// timeout the ProcessGroupGloo was created with (the world's) to every
// operation, so there the caller gets its error in time but the transport
// operation stays pending until the world's timeout, and later collectives of
// the group queue behind it. After a timeout the group is unusable; a job
// should end (as PyTorch jobs do).

namespace {

bool gloo_moves(c10::ScalarType type) {
  switch (type) {
    case at::kFloat:
    case at::kDouble:
    case at::kHalf:
    case at::kChar:
    case at::kByte:
    case at::kInt:
    case at::kLong:
      return true;
    default:
      return false;
  }
}

// The same bytes as `t`, typed so that Gloo can move them. See Note
// [Composed Gloo collectives].
at::Tensor as_gloo_bits(const at::Tensor& t) {
  if (gloo_moves(t.scalar_type())) return t;
  if (t.is_complex() && t.element_size() == 16) return at::view_as_real(t).view(at::kLong);
  switch (t.element_size()) {
    case 1:
      return t.view(at::kByte);
    case 2:
      return t.view(at::kHalf);
    case 4:
      return t.view(at::kInt);
    case 8:
      return t.view(at::kLong);
    default:
      break;
  }
  C10_THROW_ERROR(Error, c10::str("gloo cannot move tensors of dtype ", t.scalar_type()));
}

c10d::ReduceOp to_c10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return c10d::ReduceOp::SUM;
    case ReduceOp::kMax:
      return c10d::ReduceOp::MAX;
    case ReduceOp::kMin:
      return c10d::ReduceOp::MIN;
    case ReduceOp::kProduct:
      return c10d::ReduceOp::PRODUCT;
  }
  C10_THROW_ERROR(Error, "unknown ReduceOp");
}

// What Gloo reduces for a tensor of the caller's: `values` holds the result
// once the exchange is done (the caller's tensor itself when no copy was
// needed); `gloo` is `values` or a view of it in a dtype Gloo reduces.
struct ReduceOperand {
  at::Tensor values;
  at::Tensor gloo;
  c10d::ReduceOp op;
};

ReduceOperand make_reduce_operand(const at::Tensor& t, ReduceOp op, bool need_copy,
                                  const std::string& where) {
  ReduceOperand r;
  r.op = to_c10d(op);
  const c10::ScalarType type = t.scalar_type();
  if (gloo_moves(type)) {
    r.values = need_copy ? t.clone() : t;
    r.gloo = r.values;
  } else if (type == at::kBool) {
    // Sum of bools is "any" and product is "all", as c10d's NCCL backend does.
    r.values = t.to(at::kByte);
    r.gloo = r.values;
    const bool any = op == ReduceOp::kSum || op == ReduceOp::kMax;
    r.op = any ? c10d::ReduceOp::MAX : c10d::ReduceOp::MIN;
  } else if (type == at::kBFloat16 || type == at::kShort) {
    r.values = t.to(type == at::kBFloat16 ? at::kFloat : at::kInt);
    r.gloo = r.values;
  } else if (t.is_complex()) {
    TORCH_CHECK(op == ReduceOp::kSum || op == ReduceOp::kAvg, where, ": ReduceOp ",
                reduce_op_name(op), " is not defined for complex tensors (", type,
                "); use sum or avg, or reduce the real and imaginary parts yourself");
    r.values = need_copy ? t.clone() : t;
    r.gloo = at::view_as_real(r.values);
  } else {
    TORCH_CHECK(false, where, ": gloo cannot reduce dtype ", type,
                "; convert the tensor to float32 or int64 first");
  }
  return r;
}

// Timeout for waiting on one collective: its own, else the group's. See Note
// [Gloo timeouts].
std::chrono::milliseconds effective(std::chrono::milliseconds requested,
                                    std::chrono::milliseconds fallback) {
  return requested.count() > 0 ? requested : fallback;
}

// Completion of a started c10d work, plus the local finishing step of a
// composed collective, run once. Errors are converted on first wait.
class GlooWork final : public Work {
 public:
  GlooWork(std::string where, c10::intrusive_ptr<c10d::Work> work, std::function<void()> finish,
           std::chrono::milliseconds timeout)
      : where_(std::move(where)),
        work_(std::move(work)),
        finish_(std::move(finish)),
        timeout_(timeout) {}

  void wait() override {
    finalize();
    if (error_) std::rethrow_exception(error_);
  }

  bool is_completed() override {
    if (!work_->isCompleted()) return false;
    finalize();
    return true;
  }

 private:
  void finalize() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return;
    try {
      DTENSOR_GLOO_CALL(where_, work_->wait(timeout_));
      if (finish_) finish_();
    } catch (...) {
      error_ = std::current_exception();
    }
    finish_ = nullptr;  // releases the tensors the finishing step held
    done_ = true;
  }

  std::string where_;
  c10::intrusive_ptr<c10d::Work> work_;
  std::function<void()> finish_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  bool done_ = false;
  std::exception_ptr error_;
};

std::string first_line(const std::string& text) {
  const auto end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

bool contains(const std::string& text, const char* needle) {
  return text.find(needle) != std::string::npos;
}

// What to do about a Gloo failure, judged from its message.
std::string hint_for(const std::string& message) {
  if (contains(message, "imed out") || contains(message, "imeout")) {
    return "no peer completed it in time: a rank may be stuck, have exited, or be issuing a "
           "different collective (every member must issue the same collectives in the same "
           "order); if the work is just slow, raise GlooWorldOptions::timeout or the "
           "collective's timeout";
  }
  if (contains(message, "onnection closed") || contains(message, "onnection reset") ||
      contains(message, "roken pipe") || contains(message, "ocket closed")) {
    return "a peer rank (or rank 0, which serves the store) exited or crashed; its output shows "
           "the first error";
  }
  return "check that every member issues the same collective with matching shapes and dtypes";
}

}  // namespace

namespace detail {

void rethrow_gloo_error(const std::string& where) {
  std::string message;
  try {
    throw;
  } catch (const c10::Error& e) {
    message = first_line(e.what_without_backtrace());
  } catch (const std::exception& e) {
    message = first_line(e.what());
  } catch (...) {
    message = "unknown exception";
  }
  C10_THROW_ERROR(Error, c10::str(where, " failed: ", message, "; ", hint_for(message)));
}

}  // namespace detail

GlooCommunicator::GlooCommunicator(std::vector<int64_t> group_ranks, int64_t global_rank,
                                   std::shared_ptr<ObserverList> observers,
                                   c10::intrusive_ptr<c10d::ProcessGroupGloo> process_group,
                                   std::chrono::milliseconds default_timeout)
    : Communicator(std::move(group_ranks), global_rank, std::move(observers)),
      process_group_(std::move(process_group)),
      default_timeout_(default_timeout) {
  TORCH_INTERNAL_ASSERT(process_group_);
  TORCH_INTERNAL_ASSERT(process_group_->getSize() == size() && process_group_->getRank() == rank());
}

void GlooCommunicator::check_cpu(const char* op, const at::Tensor& tensor) const {
  TORCH_CHECK(tensor.device().is_cpu(), describe(op), ": tensor is on ", tensor.device(),
              " but the gloo backend here moves CPU tensors; use a CPU mesh or the nccl backend");
}

WorkPtr GlooCommunicator::complete(const char* op, c10::intrusive_ptr<c10d::Work> work,
                                   std::function<void()> finish, std::chrono::milliseconds timeout,
                                   bool async_op) {
  const std::chrono::milliseconds wait_for = effective(timeout, default_timeout_);
  std::string where = describe(op) + " with timeout " + std::to_string(wait_for.count()) + " ms";
  auto handle =
      std::make_shared<GlooWork>(std::move(where), std::move(work), std::move(finish), wait_for);
  if (async_op) return handle;
  handle->wait();
  return completed_work();
}

WorkPtr GlooCommunicator::run_all_reduce(at::Tensor& tensor, const AllReduceOptions& options) {
  check_cpu("all_reduce", tensor);
  if (tensor.numel() == 0) return completed_work();  // See Note [Composed Gloo collectives]
  const std::string where = describe("all_reduce");
  ReduceOperand r = make_reduce_operand(tensor, options.reduce_op, /*need_copy=*/false, where);
  std::vector<at::Tensor> tensors{r.gloo};
  c10d::AllreduceOptions opts;
  opts.reduceOp = r.op;
  opts.timeout = effective(options.timeout, default_timeout_);
  auto work = DTENSOR_GLOO_CALL(where, process_group_->allreduce(tensors, opts));
  const bool avg = options.reduce_op == ReduceOp::kAvg;
  const int64_t n = size();
  at::Tensor target = tensor;
  auto finish = [avg, n, target, values = r.values]() mutable {
    if (avg) values.div_(n);
    if (!values.is_same(target)) target.copy_(values);
  };
  return complete("all_reduce", std::move(work), std::move(finish), options.timeout,
                  options.async_op);
}

WorkPtr GlooCommunicator::run_all_gather_into_tensor(at::Tensor& output, const at::Tensor& input,
                                                     const AllGatherOptions& options) {
  check_cpu("all_gather_into_tensor", input);
  if (input.numel() == 0) return completed_work();  // See Note [Composed Gloo collectives]
  const std::string where = describe("all_gather_into_tensor");
  // Gloo gathers into a list of tensors shaped like the input: views of the
  // output's dim-0 blocks. See Note [Composed Gloo collectives].
  at::Tensor out_bits = as_gloo_bits(output);
  std::vector<at::Tensor> blocks;
  const int64_t rows = input.dim() == 0 ? 1 : input.size(0);
  for (int64_t i = 0; i < size(); ++i) {
    blocks.push_back(input.dim() == 0 ? out_bits.select(0, i) : out_bits.narrow(0, i * rows, rows));
  }
  std::vector<std::vector<at::Tensor>> outputs{std::move(blocks)};
  std::vector<at::Tensor> inputs{as_gloo_bits(input)};
  c10d::AllgatherOptions opts;
  opts.timeout = effective(options.timeout, default_timeout_);
  auto work = DTENSOR_GLOO_CALL(where, process_group_->allgather(outputs, inputs, opts));
  return complete("all_gather_into_tensor", std::move(work), nullptr, options.timeout,
                  options.async_op);
}

WorkPtr GlooCommunicator::run_reduce_scatter_tensor(at::Tensor& output, const at::Tensor& input,
                                                    const ReduceScatterOptions& options) {
  check_cpu("reduce_scatter_tensor", input);
  if (input.numel() == 0) return completed_work();  // See Note [Composed Gloo collectives]
  const std::string where = describe("reduce_scatter_tensor");
  // all_reduce of a private copy, then keep this rank's block. See Note
  // [Composed Gloo collectives].
  ReduceOperand r = make_reduce_operand(input, options.reduce_op, /*need_copy=*/true, where);
  std::vector<at::Tensor> tensors{r.gloo};
  c10d::AllreduceOptions opts;
  opts.reduceOp = r.op;
  opts.timeout = effective(options.timeout, default_timeout_);
  auto work = DTENSOR_GLOO_CALL(where, process_group_->allreduce(tensors, opts));
  const bool avg = options.reduce_op == ReduceOp::kAvg;
  const int64_t n = size();
  const int64_t rows = output.dim() == 0 ? 1 : output.size(0);
  const int64_t offset = rank() * rows;
  at::Tensor target = output;
  auto finish = [avg, n, rows, offset, target, values = r.values]() mutable {
    at::Tensor block = values.narrow(0, offset, rows);
    if (avg) block.div_(n);
    target.copy_(block.reshape(target.sizes()));
  };
  return complete("reduce_scatter_tensor", std::move(work), std::move(finish), options.timeout,
                  options.async_op);
}

WorkPtr GlooCommunicator::run_all_to_all_single(at::Tensor& output, const at::Tensor& input,
                                                const std::vector<int64_t>& output_split_sizes,
                                                const std::vector<int64_t>& input_split_sizes,
                                                const AllToAllOptions& options) {
  check_cpu("all_to_all_single", input);
  const std::string where = describe("all_to_all_single");
  at::Tensor out_bits = as_gloo_bits(output);
  at::Tensor in_bits = as_gloo_bits(input);
  std::vector<int64_t> out_splits = output_split_sizes;
  std::vector<int64_t> in_splits = input_split_sizes;
  c10d::AllToAllOptions opts;
  opts.timeout = effective(options.timeout, default_timeout_);
  auto work = DTENSOR_GLOO_CALL(
      where, process_group_->alltoall_base(out_bits, in_bits, out_splits, in_splits, opts));
  return complete("all_to_all_single", std::move(work), nullptr, options.timeout, options.async_op);
}

WorkPtr GlooCommunicator::run_broadcast(at::Tensor& tensor, const BroadcastOptions& options) {
  check_cpu("broadcast", tensor);
  if (tensor.numel() == 0) return completed_work();  // See Note [Composed Gloo collectives]
  const std::string where = describe("broadcast");
  std::vector<at::Tensor> tensors{as_gloo_bits(tensor)};
  c10d::BroadcastOptions opts;
  opts.rootRank = options.root;
  opts.timeout = effective(options.timeout, default_timeout_);
  auto work = DTENSOR_GLOO_CALL(where, process_group_->broadcast(tensors, opts));
  return complete("broadcast", std::move(work), nullptr, options.timeout, options.async_op);
}

WorkPtr GlooCommunicator::run_scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                                      const ScatterOptions& options) {
  check_cpu("scatter", output);
  if (output.numel() == 0) return completed_work();  // See Note [Composed Gloo collectives]
  const std::string where = describe("scatter");
  std::vector<at::Tensor> outputs{as_gloo_bits(output)};
  std::vector<std::vector<at::Tensor>> input_lists;
  if (rank() == options.root) {
    std::vector<at::Tensor> bits;
    for (const at::Tensor& in : inputs) bits.push_back(as_gloo_bits(in));
    input_lists.push_back(std::move(bits));
  }
  c10d::ScatterOptions opts;
  opts.rootRank = options.root;
  opts.timeout = effective(options.timeout, default_timeout_);
  auto work = DTENSOR_GLOO_CALL(where, process_group_->scatter(outputs, input_lists, opts));
  return complete("scatter", std::move(work), nullptr, options.timeout, options.async_op);
}

void GlooCommunicator::run_barrier(const BarrierOptions& options) {
  const std::string where = describe("barrier");
  c10d::BarrierOptions opts;
  opts.timeout = effective(options.timeout, default_timeout_);
  auto work = DTENSOR_GLOO_CALL(where, process_group_->barrier(opts));
  complete("barrier", std::move(work), nullptr, options.timeout, /*async_op=*/false);
}

}  // namespace dtensor
