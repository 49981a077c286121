// The fake collectives: each rank reads its peers' posts and writes only its
// own output, in the phases described in Note [Phases] (rendezvous.cc).
#include "backends/fake/fake_communicator.h"

#include <ATen/ops/empty.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>
#include <c10/util/accumulate.h>

#include <algorithm>
#include <numeric>
#include <sstream>

#include "backends/fake/data_movement.h"
#include "backends/rank_memory.h"

namespace dtensor {
namespace detail {

// Note [The fake network is unobserved]
// The staging buffers, copies and reductions below are the simulated network,
// not the program's compute: a real NCCL or Gloo collective runs no aten op
// on the rank's thread. Which rank reduces and when a staging buffer grows
// depends on thread timing, so if RecordFunction callbacks saw them
// (CommDebugMode's local ops, the module tracker, LibTorch's profiler), the
// same program would record different ops from run to run. Every collective
// entry point turns RecordFunction off for its duration.

namespace {

// Runs `body`; with async_op its error goes into the returned Work instead.
template <class Body>
WorkPtr complete(bool async_op, Body&& body) {
  if (!async_op) {
    body();
    return completed_work();
  }
  try {
    body();
  } catch (...) {
    return completed_work(std::current_exception());
  }
  return completed_work();
}

// Element range [begin, end) of `numel` reduced by group rank `part` of
// `parts` in a chunked all_reduce. Boundaries are multiples of 256 bytes, so
// that ATen's vectorised loops (at most 2 x 64 bytes per step) treat every
// element of a chunk as they treat it in a whole-tensor call: only the tensor's
// last few elements go through the scalar tail, in both cases.
std::pair<int64_t, int64_t> chunk_of(int64_t numel, int64_t element_size, int64_t parts,
                                     int64_t part) {
  const int64_t unit = std::max<int64_t>(1, 256 / element_size);
  const int64_t units = (numel + unit - 1) / unit;
  const int64_t begin = std::min(numel, units * part / parts * unit);
  const int64_t end = std::min(numel, units * (part + 1) / parts * unit);
  return {begin, end};
}

std::string list_string(const std::vector<int64_t>& values) {
  std::ostringstream out;
  out << c10::IntArrayRef(values);
  return out.str();
}

}  // namespace

FakeCommunicator::FakeCommunicator(std::vector<int64_t> group_ranks, int64_t global_rank,
                                   std::shared_ptr<ObserverList> observers,
                                   std::shared_ptr<FakeRendezvous> rendezvous,
                                   std::chrono::milliseconds default_timeout)
    : Communicator(std::move(group_ranks), global_rank, std::move(observers)),
      rendezvous_(std::move(rendezvous)),
      default_timeout_(default_timeout) {
  TORCH_INTERNAL_ASSERT(rendezvous_->ranks() == this->group_ranks(), "rendezvous of another group");
}

Fingerprint FakeCommunicator::fingerprint(CollectiveKind kind, const at::Tensor& t,
                                          std::vector<int64_t> shape) const {
  TORCH_CHECK(!t.defined() || !t.is_meta(), rendezvous_->describe(kind, rank()),
              ": fake collectives move real data, but got a meta tensor of shape ", t.sizes(),
              "; use solo_world for meta tensors");
  Fingerprint fp;
  fp.kind = kind;
  fp.seq = sequence_number() - 1;  // the base class already counted this collective
  if (t.defined()) {
    fp.dtype = t.scalar_type();
    fp.device_type = t.device().type();
  }
  fp.shape = std::move(shape);
  return fp;
}

std::chrono::milliseconds FakeCommunicator::timeout_of(Timeout timeout) const {
  return timeout.count() > 0 ? timeout : default_timeout_;
}

const at::Tensor& FakeCommunicator::buffer(uint64_t seq, int64_t bytes, c10::Device device) {
  at::Tensor& buffer = buffers_[seq & 1];
  if (!buffer.defined() || buffer.numel() < bytes || buffer.device() != device) {
    // Grow by half again so that slowly growing sizes do not reallocate each time.
    const int64_t old = buffer.defined() ? buffer.numel() : 0;
    // The fake world's own staging memory: a real backend needs none, so it
    // is not charged to the rank (Note [Rank memory accounting]).
    ScopedRankMemory uncounted(nullptr);
    buffer = at::empty({std::max(bytes, old + old / 2)},
                       at::TensorOptions().dtype(at::kByte).device(device));
  }
  return buffer;
}

void FakeCommunicator::post_input(RendezvousRound& round, const at::Tensor& input, bool stage) {
  Post& mine = round.mine();
  if (stage) {
    const at::Tensor& staged = buffer(round.mine().fingerprint.seq, nbytes(input), input.device());
    copy_bytes(staged, 0, input, 0, nbytes(input));
    mine.input = staged;
  } else {
    mine.input = input;
    mine.zero_copy = true;
  }
}

WorkPtr FakeCommunicator::run_all_reduce(at::Tensor& tensor, const AllReduceOptions& options) {
  at::RecordFunctionGuard unobserved(/*is_enabled=*/false);  // Note [The fake network is unobserved]
  return complete(options.async_op, [&] {
    Fingerprint fp = fingerprint(CollectiveKind::kAllReduce, tensor, tensor.sizes().vec());
    fp.reduce_op = options.reduce_op;
    if (size() == 1) return rendezvous_->check_usable(fp.kind, rank());  // x op-reduced alone is x
    RendezvousRound round(*rendezvous_, rank(), std::move(fp), timeout_of(options.timeout));
    if (nbytes(tensor) <= kStageBytes) {
      all_reduce_staged(round, tensor, options.reduce_op);
    } else {
      all_reduce_chunked(round, tensor, options.reduce_op);
    }
    round.finish();
  });
}

// Small: every rank stages its tensor, then reduces all staged copies itself.
void FakeCommunicator::all_reduce_staged(RendezvousRound& round, at::Tensor& tensor, ReduceOp op) {
  post_input(round, tensor, /*stage=*/true);
  round.arrive();
  c10::SmallVector<Slice, 8> srcs;
  for (int64_t r = 0; r < size(); ++r) srcs.push_back({&round.peer(r).input, 0});
  reduce_in_order({&tensor, 0}, srcs, tensor.numel(), tensor.scalar_type(), op);
}

// Note [All-reduce by owned chunks]
// Large CPU tensors: rank r alone owns element chunk r of EVERY member's
// tensor. Tile by tile (small enough to stay in cache) it reduces that tile of
// all members' tensors, in group order, into member 0's tensor, then copies
// the cache-hot result into members 1..n-1. No other rank touches chunk r of
// any tensor, so one phase after arriving ("done writing") is enough, and
// each byte of the world's tensors is read once and written once: what
// memcpy of every rank's tensor costs (the old two-phase scheme read every
// byte twice and wrote it once more into a buffer). Falls back to the
// two-phase scheme when tensors of different members overlap (one tensor
// passed by several rank threads) or are not on the CPU.
void FakeCommunicator::all_reduce_chunked(RendezvousRound& round, at::Tensor& tensor, ReduceOp op) {
  round.mine().input = tensor;  // written by the chunk's owner: see the Note
  round.arrive();
  bool disjoint = tensor.is_cpu();
  for (int64_t a = 0; a < size() && disjoint; ++a) {
    if (!round.peer(a).input.is_cpu()) disjoint = false;
    for (int64_t b = a + 1; b < size() && disjoint; ++b)
      disjoint = !overlaps(round.peer(a).input, round.peer(b).input);
  }
  if (!disjoint) return all_reduce_two_phase(round, tensor, op);
  const int64_t esize = tensor.element_size();
  const auto [begin, end] = chunk_of(tensor.numel(), esize, size(), rank());
  // 64 KiB tiles: a multiple of 256 bytes (See Note [Fixed reduction order]).
  const int64_t tile = std::max<int64_t>(1, (int64_t{64} << 10) / esize);
  c10::SmallVector<Slice, 8> srcs;
  for (int64_t r = 0; r < size(); ++r) srcs.push_back({&round.peer(r).input, 0});
  for (int64_t lo = begin; lo < end; lo += tile) {
    const int64_t count = std::min(tile, end - lo);
    for (Slice& src : srcs) src.offset = lo * esize;
    reduce_in_order(srcs[0], srcs, count, tensor.scalar_type(), op);
    for (int64_t r = 1; r < size(); ++r)
      copy_bytes(round.peer(r).input, lo * esize, round.peer(0).input, lo * esize, count * esize);
  }
  round.sync();  // every owner finished writing into every tensor
  round.release_inputs();
}

// The fallback of Note [All-reduce by owned chunks]: rank r reduces chunk r of
// every tensor into its buffer (phase 1), then every rank copies all reduced
// chunks into its tensor (phase 2). Peers read this rank's tensor only in
// phase 1 and its buffer (double-buffered by parity) only in phase 2.
void FakeCommunicator::all_reduce_two_phase(RendezvousRound& round, at::Tensor& tensor,
                                            ReduceOp op) {
  const int64_t esize = tensor.element_size();
  const auto [begin, end] = chunk_of(tensor.numel(), esize, size(), rank());
  const at::Tensor& reduced =
      buffer(round.mine().fingerprint.seq, (end - begin) * esize, tensor.device());
  c10::SmallVector<Slice, 8> srcs;
  for (int64_t r = 0; r < size(); ++r) srcs.push_back({&round.peer(r).input, begin * esize});
  reduce_in_order({&reduced, 0}, srcs, end - begin, tensor.scalar_type(), op);
  round.mine().reduced = reduced;
  round.sync();
  round.release_inputs();
  for (int64_t r = 0; r < size(); ++r) {
    const auto [lo, hi] = chunk_of(tensor.numel(), esize, size(), r);
    copy_bytes(tensor, lo * esize, round.peer(r).reduced, 0, (hi - lo) * esize);
  }
}

WorkPtr FakeCommunicator::run_all_gather_into_tensor(at::Tensor& output, const at::Tensor& input,
                                                     const AllGatherOptions& options) {
  at::RecordFunctionGuard unobserved(/*is_enabled=*/false);  // Note [The fake network is unobserved]
  return complete(options.async_op, [&] {
    const int64_t block = nbytes(input);
    Fingerprint fp = fingerprint(CollectiveKind::kAllGatherIntoTensor, input, input.sizes().vec());
    if (size() == 1) {
      rendezvous_->check_usable(fp.kind, rank());
      return copy_bytes(output, 0, input, 0, block);
    }
    RendezvousRound round(*rendezvous_, rank(), std::move(fp), timeout_of(options.timeout));
    // In place (input is this rank's block of output) is safe without staging:
    // peers read that block while this rank writes the others.
    const char* own_block = static_cast<const char*>(output.data_ptr()) + rank() * block;
    const bool in_place = input.data_ptr() == own_block;
    post_input(round, input, block <= kStageBytes || (overlaps(input, output) && !in_place));
    round.arrive();
    for (int64_t r = 0; r < size(); ++r)
      copy_bytes(output, r * block, round.peer(r).input, 0, block);
    if (round.any_zero_copy()) {
      round.sync();
      round.release_inputs();
    }
    round.finish();
  });
}

WorkPtr FakeCommunicator::run_reduce_scatter_tensor(at::Tensor& output, const at::Tensor& input,
                                                    const ReduceScatterOptions& options) {
  at::RecordFunctionGuard unobserved(/*is_enabled=*/false);  // Note [The fake network is unobserved]
  return complete(options.async_op, [&] {
    const int64_t block = nbytes(output);
    Fingerprint fp =
        fingerprint(CollectiveKind::kReduceScatterTensor, output, output.sizes().vec());
    fp.reduce_op = options.reduce_op;
    if (size() == 1) {
      rendezvous_->check_usable(fp.kind, rank());
      return copy_bytes(output, 0, input, 0, block);
    }
    RendezvousRound round(*rendezvous_, rank(), std::move(fp), timeout_of(options.timeout));
    const char* own_block = static_cast<const char*>(input.data_ptr()) + rank() * block;
    const bool aliased = overlaps(input, output);
    const bool stage = nbytes(input) <= kStageBytes || (aliased && output.data_ptr() != own_block);
    post_input(round, input, stage);
    round.arrive();
    c10::SmallVector<Slice, 8> srcs;
    for (int64_t r = 0; r < size(); ++r) srcs.push_back({&round.peer(r).input, rank() * block});
    // In place, the output is this rank's own source block: reduce aside first.
    const at::Tensor& target =
        aliased && !stage ? buffer(round.mine().fingerprint.seq, block, output.device()) : output;
    reduce_in_order({&target, 0}, srcs, output.numel(), output.scalar_type(), options.reduce_op);
    copy_bytes(output, 0, target, 0, block);  // no-op when target is output
    if (round.any_zero_copy()) {
      round.sync();
      round.release_inputs();
    }
    round.finish();
  });
}

void FakeCommunicator::check_split_agreement(RendezvousRound& round) const {
  for (int64_t from = 0; from < size(); ++from) {
    for (int64_t to = 0; to < size(); ++to) {
      const int64_t sent = round.peer(from).send_splits[to];
      const int64_t expected = round.peer(to).recv_splits[from];
      if (sent == expected) continue;
      std::ostringstream out;
      out << rendezvous_->describe(CollectiveKind::kAllToAllSingle, rank())
          << ": split sizes disagree: global rank " << group_ranks()[from] << " sends " << sent
          << " rows to global rank " << group_ranks()[to] << ", which expects " << expected
          << " rows from it. input_split_sizes / output_split_sizes per rank:";
      for (int64_t r = 0; r < size(); ++r) {
        out << "\n  global rank " << group_ranks()[r] << ": "
            << list_string(round.peer(r).send_splits) << " / "
            << list_string(round.peer(r).recv_splits);
      }
      out << "\nRank j's input_split_sizes[k] must equal rank k's output_split_sizes[j].";
      std::string message = out.str();
      rendezvous_->mark_broken(message);
      TORCH_CHECK(false, message);
    }
  }
}

WorkPtr FakeCommunicator::run_all_to_all_single(at::Tensor& output, const at::Tensor& input,
                                                const std::vector<int64_t>& output_split_sizes,
                                                const std::vector<int64_t>& input_split_sizes,
                                                const AllToAllOptions& options) {
  at::RecordFunctionGuard unobserved(/*is_enabled=*/false);  // Note [The fake network is unobserved]
  return complete(options.async_op, [&] {
    const int64_t row_bytes =
        c10::multiply_integers(input.sizes().slice(1)) * static_cast<int64_t>(input.element_size());
    Fingerprint fp =
        fingerprint(CollectiveKind::kAllToAllSingle, input, input.sizes().slice(1).vec());
    if (size() == 1) {
      rendezvous_->check_usable(fp.kind, rank());
      return copy_bytes(output, 0, input, 0, nbytes(input));
    }
    RendezvousRound round(*rendezvous_, rank(), std::move(fp), timeout_of(options.timeout));
    post_input(round, input, nbytes(input) <= kStageBytes || overlaps(input, output));
    round.mine().send_splits = input_split_sizes;
    round.mine().recv_splits = output_split_sizes;
    round.arrive();
    check_split_agreement(round);
    int64_t out_row = 0;
    for (int64_t r = 0; r < size(); ++r) {
      const std::vector<int64_t>& sent = round.peer(r).send_splits;
      const int64_t in_row = std::accumulate(sent.begin(), sent.begin() + rank(), int64_t{0});
      copy_bytes(output, out_row * row_bytes, round.peer(r).input, in_row * row_bytes,
                 output_split_sizes[r] * row_bytes);
      out_row += output_split_sizes[r];
    }
    if (round.any_zero_copy()) {
      round.sync();
      round.release_inputs();
    }
    round.finish();
  });
}

WorkPtr FakeCommunicator::run_broadcast(at::Tensor& tensor, const BroadcastOptions& options) {
  at::RecordFunctionGuard unobserved(/*is_enabled=*/false);  // Note [The fake network is unobserved]
  return complete(options.async_op, [&] {
    Fingerprint fp = fingerprint(CollectiveKind::kBroadcast, tensor, tensor.sizes().vec());
    fp.root = options.root;
    if (size() == 1) return rendezvous_->check_usable(fp.kind, rank());
    RendezvousRound round(*rendezvous_, rank(), std::move(fp), timeout_of(options.timeout));
    if (rank() == options.root) post_input(round, tensor, nbytes(tensor) <= kStageBytes);
    round.arrive();
    if (rank() != options.root)
      copy_bytes(tensor, 0, round.peer(options.root).input, 0, nbytes(tensor));
    if (round.any_zero_copy()) {
      round.sync();
      round.release_inputs();
    }
    round.finish();
  });
}

WorkPtr FakeCommunicator::run_scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                                      const ScatterOptions& options) {
  at::RecordFunctionGuard unobserved(/*is_enabled=*/false);  // Note [The fake network is unobserved]
  return complete(options.async_op, [&] {
    const int64_t block = nbytes(output);
    Fingerprint fp = fingerprint(CollectiveKind::kScatter, output, output.sizes().vec());
    fp.root = options.root;
    if (size() == 1) {
      rendezvous_->check_usable(fp.kind, rank());
      return copy_bytes(output, 0, inputs[0], 0, block);
    }
    RendezvousRound round(*rendezvous_, rank(), std::move(fp), timeout_of(options.timeout));
    if (rank() == options.root) {
      bool stage = block * size() <= kStageBytes;
      for (int64_t r = 0; r < size(); ++r)
        stage = stage || (r != rank() && overlaps(inputs[r], output));
      Post& mine = round.mine();
      if (stage) {
        mine.input = buffer(mine.fingerprint.seq, block * size(), output.device());
        for (int64_t r = 0; r < size(); ++r) copy_bytes(mine.input, r * block, inputs[r], 0, block);
      } else {
        mine.inputs = inputs;
        mine.zero_copy = true;
      }
    }
    round.arrive();
    const Post& root = round.peer(options.root);
    if (root.zero_copy) {
      copy_bytes(output, 0, root.inputs[rank()], 0, block);
    } else {
      copy_bytes(output, 0, root.input, rank() * block, block);
    }
    if (round.any_zero_copy()) {
      round.sync();
      round.release_inputs();
    }
    round.finish();
  });
}

void FakeCommunicator::run_barrier(const BarrierOptions& options) {
  at::RecordFunctionGuard unobserved(/*is_enabled=*/false);  // Note [The fake network is unobserved]
  Fingerprint fp = fingerprint(CollectiveKind::kBarrier, at::Tensor(), {});
  if (size() == 1) return rendezvous_->check_usable(fp.kind, rank());
  RendezvousRound round(*rendezvous_, rank(), std::move(fp), timeout_of(options.timeout));
  round.arrive();
  round.finish();
}

}  // namespace detail
}  // namespace dtensor
