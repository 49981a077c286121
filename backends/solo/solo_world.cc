// The solo backend: shape-correct collectives with the placeholder contents
// documented in solo_world.h, and no data exchange.
#include "backends/solo/solo_world.h"

#include <c10/util/Exception.h>

#include <cstring>

namespace dtensor {
namespace {

char* data_bytes(const at::Tensor& t) { return static_cast<char*>(t.data_ptr()); }

int64_t nbytes(const at::Tensor& t) {
  return static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size());
}

// Meta tensors have no data: solo collectives leave them alone entirely.
bool has_data(const at::Tensor& t) { return !t.is_meta() && t.numel() > 0; }

// Copies `bytes` bytes between contiguous tensors at byte offsets.
void copy_bytes(const at::Tensor& dst, int64_t dst_offset, const at::Tensor& src,
                int64_t src_offset, int64_t bytes) {
  if (bytes == 0 || data_bytes(dst) + dst_offset == data_bytes(src) + src_offset) return;
  if (dst.is_cpu() && src.is_cpu()) {
    std::memmove(data_bytes(dst) + dst_offset, data_bytes(src) + src_offset,
                 static_cast<size_t>(bytes));
    return;
  }
  const int64_t esize = dst.element_size();
  dst.view(-1)
      .narrow(0, dst_offset / esize, bytes / esize)
      .copy_(src.view(-1).narrow(0, src_offset / esize, bytes / esize));
}

void zero_bytes(const at::Tensor& dst, int64_t offset, int64_t bytes) {
  if (bytes == 0) return;
  const int64_t esize = dst.element_size();
  dst.view(-1).narrow(0, offset / esize, bytes / esize).zero_();
}

class SoloCommunicator final : public Communicator {
 public:
  SoloCommunicator(std::vector<int64_t> ranks, int64_t global_rank,
                   std::shared_ptr<ObserverList> observers, bool error_on_collective)
      : Communicator(std::move(ranks), global_rank, std::move(observers)),
        error_on_collective_(error_on_collective) {}

  const char* backend_name() const override { return "solo"; }

 protected:
  WorkPtr run_all_reduce(at::Tensor&, const AllReduceOptions&) override {
    check_allowed("all_reduce");
    return completed_work();
  }

  WorkPtr run_all_gather_into_tensor(at::Tensor& output, const at::Tensor& input,
                                     const AllGatherOptions&) override {
    check_allowed("all_gather_into_tensor");
    if (!has_data(output)) return completed_work();
    for (int64_t r = 0; r < size(); ++r)
      copy_bytes(output, r * nbytes(input), input, 0, nbytes(input));
    return completed_work();
  }

  WorkPtr run_reduce_scatter_tensor(at::Tensor& output, const at::Tensor& input,
                                    const ReduceScatterOptions&) override {
    check_allowed("reduce_scatter_tensor");
    if (has_data(output)) copy_bytes(output, 0, input, rank() * nbytes(output), nbytes(output));
    return completed_work();
  }

  WorkPtr run_all_to_all_single(at::Tensor& output, const at::Tensor& input,
                                const std::vector<int64_t>& output_split_sizes,
                                const std::vector<int64_t>& input_split_sizes,
                                const AllToAllOptions&) override {
    check_allowed("all_to_all_single");
    if (!has_data(output)) return completed_work();
    const int64_t row_bytes = output.numel() / output.size(0) * output.element_size();
    int64_t in_row = 0;
    int64_t out_row = 0;
    for (int64_t r = 0; r < size(); ++r) {
      const int64_t rows = output_split_sizes[r];
      if (input_split_sizes[r] == rows) {
        copy_bytes(output, out_row * row_bytes, input, in_row * row_bytes, rows * row_bytes);
      } else {
        zero_bytes(output, out_row * row_bytes, rows * row_bytes);
      }
      in_row += input_split_sizes[r];
      out_row += rows;
    }
    return completed_work();
  }

  WorkPtr run_broadcast(at::Tensor&, const BroadcastOptions&) override {
    check_allowed("broadcast");
    return completed_work();
  }

  WorkPtr run_scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                      const ScatterOptions& options) override {
    check_allowed("scatter");
    if (!has_data(output)) return completed_work();
    if (rank() == options.root) {
      copy_bytes(output, 0, inputs[rank()], 0, nbytes(output));
    } else {
      zero_bytes(output, 0, nbytes(output));
    }
    return completed_work();
  }

  void run_barrier(const BarrierOptions&) override { check_allowed("barrier"); }

 private:
  void check_allowed(const char* op) const {
    TORCH_CHECK(!error_on_collective_, describe(op),
                ": this solo world was created with "
                "SoloOptions::error_on_collective, so no collective may be issued; find the "
                "caller of ",
                op, " or leave error_on_collective off");
  }

  bool error_on_collective_;
};

class SoloWorld final : public World {
 public:
  SoloWorld(int64_t size, int64_t rank, const SoloOptions& options)
      : World(rank, size, options.device, options.timeout), options_(options) {
    enable_memory_accounting(options.memory_cap_bytes);
  }

  BackendKind backend() const override { return BackendKind::kSolo; }

 protected:
  std::shared_ptr<Communicator> create_group(const std::vector<int64_t>& ranks) override {
    return std::make_shared<SoloCommunicator>(ranks, rank(), shared_observers(),
                                              options_.error_on_collective);
  }

 private:
  SoloOptions options_;
};

}  // namespace

std::shared_ptr<World> solo_world(int64_t world_size, int64_t rank, const SoloOptions& options) {
  TORCH_CHECK(world_size >= 1, "solo_world: world_size must be at least 1, got ", world_size);
  TORCH_CHECK(rank >= 0 && rank < world_size, "solo_world: rank ", rank,
              " is outside the world of size ", world_size, "; pass 0 <= rank < world_size");
  TORCH_CHECK(options.memory_cap_bytes >= 0,
              "solo_world: memory_cap_bytes must be 0 (no cap) or positive, got ",
              options.memory_cap_bytes);
  return std::make_shared<SoloWorld>(world_size, rank, options);
}

void run_solo_world(int64_t world_size, int64_t rank, const std::function<void(World&)>& fn,
                    const SoloOptions& options) {
  TORCH_CHECK(fn, "run_solo_world: fn is empty");
  std::shared_ptr<World> world = solo_world(world_size, rank, options);
  ScopedCurrentWorld current(*world);
  fn(*world);
}

}  // namespace dtensor
