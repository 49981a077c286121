// World: one rank's view of the job (rank, size, device, groups, observers),
// and the thread's "current world" that DeviceMesh::init picks up.
//   dtensor::run_fake_world(4, [](dtensor::World& world) {
//     auto all = world.new_group({0, 1, 2, 3});
//   });
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backends/collective_event.h"
#include "backends/communicator.h"
#include "backends/rank_memory.h"

namespace dtensor {

enum class BackendKind { kFake, kSolo, kGloo, kNccl };

/// "fake", "solo", "gloo", "nccl".
const char* backend_kind_name(BackendKind kind);

/// One rank's handle on the whole job. Not shared between ranks: in a fake
/// world every rank thread has its own World.
class World {
 public:
  World(int64_t rank, int64_t size, c10::Device device, std::chrono::milliseconds timeout);
  virtual ~World() = default;
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  virtual BackendKind backend() const = 0;
  int64_t rank() const { return rank_; }
  int64_t size() const { return size_; }
  /// The device this rank's tensors live on (CPU, or this rank's GPU).
  c10::Device device() const { return device_; }
  /// Default timeout of every collective that does not set its own.
  std::chrono::milliseconds timeout() const { return timeout_; }

  /// The communicator over `ranks` (global ranks, in group order, this rank
  /// among them). Every member calls it; the same `ranks` returns the same
  /// communicator, so meshes over the same ranks share their groups.
  std::shared_ptr<Communicator> new_group(const std::vector<int64_t>& ranks);
  /// The group of all ranks.
  std::shared_ptr<Communicator> world_group();

  /// This rank's collective observers (tracing, tests).
  ObserverList& observers() { return *observers_; }
  const std::shared_ptr<ObserverList>& shared_observers() const { return observers_; }

  /// This rank's random generator, seeded identically on every rank (as
  /// torch.manual_seed(seed) on every process would be).
  at::Generator& generator() { return generator_; }
  void manual_seed(uint64_t seed);

  /// This rank's memory figures (see Note [Rank memory accounting] in
  /// backends/rank_memory.cc); nullopt where memory is not measured (Gloo,
  /// NCCL: use the device's own allocator statistics there).
  virtual std::optional<RankMemoryStats> memory_stats() const;
  /// The peak becomes this rank's live bytes now.
  virtual void reset_peak_memory();
  /// Labels later peaks with where the program is ("layers.0.attention
  /// forward"); a no-op where memory is not measured.
  virtual void set_memory_location(std::string label);
  /// The account ScopedCurrentWorld charges this thread's allocations to
  /// (holds nullptr where memory is not measured).
  const std::shared_ptr<RankMemoryAccount>& memory_account() const { return memory_; }

 protected:
  /// Measures this rank's memory from now on (fake and solo worlds); cap_bytes
  /// 0 = no cap.
  void enable_memory_accounting(int64_t cap_bytes);

  /// Creates the backend's communicator; `ranks` is validated and contains
  /// this rank. Called at most once per distinct `ranks`.
  virtual std::shared_ptr<Communicator> create_group(const std::vector<int64_t>& ranks) = 0;

 private:
  int64_t rank_;
  int64_t size_;
  c10::Device device_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<ObserverList> observers_;
  at::Generator generator_;
  std::mutex groups_mutex_;
  std::map<std::vector<int64_t>, std::shared_ptr<Communicator>> groups_;
  std::shared_ptr<RankMemoryAccount> memory_;
};

/// The world of the calling thread, or nullptr outside any world.
World* current_world();

/// The world of the calling thread; throws a message saying how to start one.
World& require_current_world(const char* caller);

/// Makes `world` the calling thread's current world for its lifetime, and its
/// memory account (if any) the thread's (ScopedRankMemory).
class ScopedCurrentWorld {
 public:
  explicit ScopedCurrentWorld(World& world);
  ~ScopedCurrentWorld();
  ScopedCurrentWorld(const ScopedCurrentWorld&) = delete;
  ScopedCurrentWorld& operator=(const ScopedCurrentWorld&) = delete;

 private:
  World* previous_;
  ScopedRankMemory memory_;
};

// Note [cuBLAS workspace of CUDA ranks]
// A rank's first matmul on its stream makes cuBLAS allocate its workspace
// (32 MiB on an H100) through the caching allocator, charged to that rank,
// unless a stream of an earlier world left one to reuse: a fixed cost of the
// runtime, not of the program, present or not depending on what ran before.
// Whoever measures a rank's memory runs one matmul first and counts only
// what is live after it.

/// Runs one small matmul on `device` so that cuBLAS's workspace is allocated
/// now, on this rank, and not inside what is measured next; nothing off a
/// CUDA device. See Note [cuBLAS workspace of CUDA ranks].
void allocate_cublas_workspace(c10::Device device);

}  // namespace dtensor
