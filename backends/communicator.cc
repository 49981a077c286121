// Argument validation and event reporting shared by every backend. Backends
// see only calls that passed these checks.
#include "backends/communicator.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <numeric>
#include <sstream>

namespace dtensor {
namespace {

class CompletedWork final : public Work {
 public:
  explicit CompletedWork(std::exception_ptr error) : error_(std::move(error)) {}
  void wait() override {
    if (error_) std::rethrow_exception(error_);
  }
  bool is_completed() override { return true; }

 private:
  std::exception_ptr error_;
};

std::string shape_string(c10::IntArrayRef shape) {
  std::ostringstream out;
  out << shape;
  return out.str();
}

std::string list_string(const std::vector<int64_t>& values) {
  return shape_string(c10::IntArrayRef(values));
}

// Note [Lazy collective description]
// Every check below names the collective, the group and the rank, but only
// when it fails: TORCH_CHECK evaluates its message arguments on failure only,
// so a Where (two pointers) is streamed instead of a prebuilt std::string.
// Building the string on every call cost 5-9 us per collective (callgrind:
// most of a group-of-one all_reduce). See benchmarks/BENCHMARKS.md.
struct Where {
  const Communicator* comm;
  const char* op;
};

std::ostream& operator<<(std::ostream& out, const Where& where) {
  return out << where.comm->describe(where.op);
}

int64_t bytes_of(const at::Tensor& t) {
  return static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size());
}

// Checks what every collective needs of a tensor: defined and contiguous.
void check_tensor(const Where& where, const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.defined(), where, ": ", name, " is an undefined tensor");
  TORCH_CHECK(t.is_contiguous(), where, ": ", name, " with shape ", t.sizes(), " and strides ",
              t.strides(), " is not contiguous; pass tensor.contiguous()");
}

void check_same_dtype_device(const Where& where, const at::Tensor& output,
                             const at::Tensor& input) {
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), where, ": output dtype ",
              output.scalar_type(), " differs from input dtype ", input.scalar_type(),
              "; allocate the output with the input's dtype");
  TORCH_CHECK(output.device() == input.device(), where, ": output is on ", output.device(),
              " but input is on ", input.device(), "; keep both on one device");
}

// output must be input with dim 0 scaled by `factor` (a 0-dim input gathers
// into a 1-dim output of `factor` elements).
void check_scaled_dim0(const Where& where, const at::Tensor& big, const at::Tensor& small,
                       int64_t factor, const char* big_name, const char* small_name) {
  std::vector<int64_t> expected = small.sizes().vec();
  if (expected.empty()) {
    expected.push_back(factor);
  } else {
    expected[0] *= factor;
  }
  TORCH_CHECK(big.sizes().vec() == expected, where, ": ", big_name, " has shape ", big.sizes(),
              " but must be ", list_string(expected), " (", factor, " ranks x ", small_name, " ",
              small.sizes(), " concatenated on dim 0)");
}

std::vector<int64_t> even_splits(const Where& where, int64_t rows, int64_t parts) {
  TORCH_CHECK(parts > 0 && rows % parts == 0, where, ": ", rows,
              " rows on dim 0 cannot be split evenly over ", parts,
              " ranks; pass explicit split sizes");
  return std::vector<int64_t>(static_cast<size_t>(parts), rows / parts);
}

void check_splits(const Where& where, const std::vector<int64_t>& splits, int64_t parts,
                  int64_t rows, const char* name) {
  TORCH_CHECK(static_cast<int64_t>(splits.size()) == parts, where, ": ", name, " ",
              list_string(splits), " has ", splits.size(), " entries but the group has ", parts,
              " ranks");
  for (int64_t s : splits) {
    TORCH_CHECK(s >= 0, where, ": ", name, " ", list_string(splits), " has a negative entry");
  }
  int64_t total = std::accumulate(splits.begin(), splits.end(), int64_t{0});
  TORCH_CHECK(total == rows, where, ": ", name, " ", list_string(splits), " sums to ", total,
              " but the tensor has ", rows, " rows on dim 0");
}

}  // namespace

WorkPtr completed_work(std::exception_ptr error) {
  return std::make_shared<CompletedWork>(std::move(error));
}

std::vector<int64_t> even_split_sizes(int64_t rows, int64_t parts, const char* what) {
  TORCH_CHECK(parts > 0 && rows % parts == 0, what, ": ", rows,
              " rows on dim 0 cannot be split evenly over ", parts,
              " ranks; pass explicit split sizes");
  return std::vector<int64_t>(static_cast<size_t>(parts), rows / parts);
}

Communicator::Communicator(std::vector<int64_t> group_ranks, int64_t global_rank,
                           std::shared_ptr<ObserverList> observers)
    : group_ranks_(std::move(group_ranks)),
      global_rank_(global_rank),
      observers_(std::move(observers)) {
  auto it = std::find(group_ranks_.begin(), group_ranks_.end(), global_rank_);
  TORCH_CHECK(it != group_ranks_.end(), "rank ", global_rank_, " is not a member of group ",
              list_string(group_ranks_), "; only members may create a group's communicator");
  group_rank_ = it - group_ranks_.begin();
}

std::string Communicator::describe(const char* op) const {
  std::ostringstream out;
  out << op << " on " << backend_name() << " group " << list_string(group_ranks_) << " (group rank "
      << group_rank_ << " of " << size() << ", global rank " << global_rank_ << ")";
  return out.str();
}

// Note [Events only when observed]
// A CollectiveEvent copies the group's ranks and every shape; with no
// observer registered (the common case outside tracing) nothing is built and
// only the sequence number advances, so numbering does not depend on tracing.
bool Communicator::observed() const { return observers_ && !observers_->empty(); }

CollectiveEvent Communicator::make_event(CollectiveKind kind, uint64_t seq,
                                         c10::ArrayRef<const at::Tensor*> inputs,
                                         c10::ArrayRef<const at::Tensor*> outputs,
                                         c10::ScalarType dtype, bool async_op,
                                         std::shared_ptr<const MeshDimTag> mesh_tag) const {
  CollectiveEvent event;
  event.kind = kind;
  event.group_ranks = group_ranks_;
  event.group_rank = group_rank_;
  event.global_rank = global_rank_;
  event.seq = seq;
  event.dtype = dtype;
  event.async_op = async_op;
  event.mesh = std::move(mesh_tag);
  // See Note [Collective origins] in core/redistribution_origin.h.
  event.origin = current_collective_origin();
  for (const at::Tensor* t : inputs) {
    event.input_shapes.push_back(t->sizes().vec());
    event.input_bytes += bytes_of(*t);
  }
  for (const at::Tensor* t : outputs) {
    event.output_shapes.push_back(t->sizes().vec());
    event.output_bytes += bytes_of(*t);
  }
  return event;
}

void Communicator::report(const CollectiveEvent& event) { observers_->notify(event); }

WorkPtr Communicator::all_reduce(at::Tensor& tensor, const AllReduceOptions& options,
                                 std::shared_ptr<const MeshDimTag> mesh) {
  const Where where{this, "all_reduce"};
  check_tensor(where, tensor, "tensor");
  TORCH_CHECK(options.reduce_op != ReduceOp::kAvg || at::isFloatingType(tensor.scalar_type()) ||
                  at::isComplexType(tensor.scalar_type()),
              where, ": ReduceOp avg needs a floating-point tensor, got ", tensor.scalar_type(),
              "; reduce with sum and divide, or convert to float");
  const uint64_t seq = next_seq_++;
  if (observed()) {  // See Note [Events only when observed]
    CollectiveEvent event = make_event(CollectiveKind::kAllReduce, seq, {&tensor}, {&tensor},
                                       tensor.scalar_type(), options.async_op, mesh);
    event.reduce_op = options.reduce_op;
    report(event);
  }
  return run_all_reduce(tensor, options);
}

WorkPtr Communicator::all_gather_into_tensor(at::Tensor& output, const at::Tensor& input,
                                             const AllGatherOptions& options,
                                 std::shared_ptr<const MeshDimTag> mesh) {
  const Where where{this, "all_gather_into_tensor"};
  check_tensor(where, input, "input");
  check_tensor(where, output, "output");
  check_same_dtype_device(where, output, input);
  check_scaled_dim0(where, output, input, size(), "output", "input");
  const uint64_t seq = next_seq_++;
  if (observed())
    report(make_event(CollectiveKind::kAllGatherIntoTensor, seq, {&input}, {&output},
                      input.scalar_type(), options.async_op, mesh));
  return run_all_gather_into_tensor(output, input, options);
}

WorkPtr Communicator::reduce_scatter_tensor(at::Tensor& output, const at::Tensor& input,
                                            const ReduceScatterOptions& options,
                                 std::shared_ptr<const MeshDimTag> mesh) {
  const Where where{this, "reduce_scatter_tensor"};
  check_tensor(where, input, "input");
  check_tensor(where, output, "output");
  check_same_dtype_device(where, output, input);
  check_scaled_dim0(where, input, output, size(), "input", "output");
  TORCH_CHECK(options.reduce_op != ReduceOp::kAvg || at::isFloatingType(input.scalar_type()) ||
                  at::isComplexType(input.scalar_type()),
              where, ": ReduceOp avg needs a floating-point tensor, got ", input.scalar_type());
  const uint64_t seq = next_seq_++;
  if (observed()) {  // See Note [Events only when observed]
    CollectiveEvent event = make_event(CollectiveKind::kReduceScatterTensor, seq, {&input},
                                       {&output}, input.scalar_type(), options.async_op, mesh);
    event.reduce_op = options.reduce_op;
    report(event);
  }
  return run_reduce_scatter_tensor(output, input, options);
}

WorkPtr Communicator::all_to_all_single(at::Tensor& output, const at::Tensor& input,
                                        const AllToAllOptions& options,
                                 std::shared_ptr<const MeshDimTag> mesh) {
  const Where where{this, "all_to_all_single"};
  check_tensor(where, input, "input");
  check_tensor(where, output, "output");
  check_same_dtype_device(where, output, input);
  TORCH_CHECK(input.dim() >= 1 && output.dim() == input.dim() &&
                  output.sizes().slice(1) == input.sizes().slice(1),
              where, ": input ", input.sizes(), " and output ", output.sizes(),
              " must have at least one dim and equal sizes after dim 0");
  std::vector<int64_t> in_splits = options.input_split_sizes;
  std::vector<int64_t> out_splits = options.output_split_sizes;
  if (in_splits.empty()) in_splits = even_splits(where, input.size(0), size());
  if (out_splits.empty()) out_splits = even_splits(where, output.size(0), size());
  check_splits(where, in_splits, size(), input.size(0), "input_split_sizes");
  check_splits(where, out_splits, size(), output.size(0), "output_split_sizes");
  const uint64_t seq = next_seq_++;
  if (observed())
    report(make_event(CollectiveKind::kAllToAllSingle, seq, {&input}, {&output},
                      input.scalar_type(), options.async_op, mesh));
  return run_all_to_all_single(output, input, out_splits, in_splits, options);
}

WorkPtr Communicator::broadcast(at::Tensor& tensor, const BroadcastOptions& options,
                                 std::shared_ptr<const MeshDimTag> mesh) {
  const Where where{this, "broadcast"};
  check_tensor(where, tensor, "tensor");
  TORCH_CHECK(options.root >= 0 && options.root < size(), where, ": root ", options.root,
              " is not a group rank (0..", size() - 1, "); roots are ranks within the group");
  const uint64_t seq = next_seq_++;
  if (observed()) {  // See Note [Events only when observed]
    CollectiveEvent event = make_event(CollectiveKind::kBroadcast, seq, {&tensor}, {&tensor},
                                       tensor.scalar_type(), options.async_op, mesh);
    event.root = options.root;
    report(event);
  }
  return run_broadcast(tensor, options);
}

WorkPtr Communicator::scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                              const ScatterOptions& options,
                                 std::shared_ptr<const MeshDimTag> mesh) {
  const Where where{this, "scatter"};
  check_tensor(where, output, "output");
  TORCH_CHECK(options.root >= 0 && options.root < size(), where, ": root ", options.root,
              " is not a group rank (0..", size() - 1, ")");
  std::vector<const at::Tensor*> input_ptrs;
  if (rank() == options.root) {
    TORCH_CHECK(static_cast<int64_t>(inputs.size()) == size(), where, ": the root must pass ",
                size(), " inputs (one per group rank), got ", inputs.size());
    for (const at::Tensor& in : inputs) {
      check_tensor(where, in, "input");
      check_same_dtype_device(where, output, in);
      TORCH_CHECK(in.sizes() == output.sizes(), where, ": input shape ", in.sizes(),
                  " differs from output shape ", output.sizes());
      input_ptrs.push_back(&in);
    }
  } else {
    TORCH_CHECK(inputs.empty(), where, ": only the root (group rank ", options.root,
                ") passes inputs; this rank passed ", inputs.size());
  }
  const uint64_t seq = next_seq_++;
  if (observed()) {  // See Note [Events only when observed]
    CollectiveEvent event = make_event(CollectiveKind::kScatter, seq, input_ptrs, {&output},
                                       output.scalar_type(), options.async_op, mesh);
    event.root = options.root;
    report(event);
  }
  return run_scatter(output, inputs, options);
}

void Communicator::barrier(const BarrierOptions& options) {
  const uint64_t seq = next_seq_++;
  if (observed())
    report(make_event(CollectiveKind::kBarrier, seq, {}, {}, c10::ScalarType::Byte, false, nullptr));
  run_barrier(options);
}

}  // namespace dtensor
