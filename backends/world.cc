// World bookkeeping common to every backend: group cache, rank checks, the
// thread's current world.
#include "backends/world.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <c10/util/Exception.h>

#include <set>
#include <utility>

namespace dtensor {
namespace {
thread_local World* t_current_world = nullptr;
constexpr uint64_t kDefaultSeed = 0;
}  // namespace

const char* backend_kind_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::kFake:
      return "fake";
    case BackendKind::kSolo:
      return "solo";
    case BackendKind::kGloo:
      return "gloo";
    case BackendKind::kNccl:
      return "nccl";
  }
  return "unknown";
}

World::World(int64_t rank, int64_t size, c10::Device device, std::chrono::milliseconds timeout)
    : rank_(rank),
      size_(size),
      device_(device),
      timeout_(timeout),
      observers_(std::make_shared<ObserverList>()),
      generator_(at::make_generator<at::CPUGeneratorImpl>(kDefaultSeed)) {
  TORCH_CHECK(size > 0, "a world needs at least one rank, got size ", size);
  TORCH_CHECK(rank >= 0 && rank < size, "rank ", rank, " is outside the world of size ", size);
  TORCH_CHECK(timeout.count() > 0, "the world's collective timeout must be positive, got ",
              timeout.count(), " ms");
}

void World::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(generator_.mutex());
  generator_.set_current_seed(seed);
}

std::shared_ptr<Communicator> World::new_group(const std::vector<int64_t>& ranks) {
  TORCH_CHECK(!ranks.empty(), "new_group on rank ", rank_, ": a group needs at least one rank");
  std::set<int64_t> seen;
  bool member = false;
  for (int64_t r : ranks) {
    TORCH_CHECK(r >= 0 && r < size_, "new_group on rank ", rank_, ": rank ", r,
                " is outside the world of size ", size_);
    TORCH_CHECK(seen.insert(r).second, "new_group on rank ", rank_, ": rank ", r,
                " appears twice in ", c10::IntArrayRef(ranks));
    member = member || r == rank_;
  }
  TORCH_CHECK(member, "new_group on rank ", rank_, ": this rank is not in ",
              c10::IntArrayRef(ranks), "; only members create a group");
  std::lock_guard<std::mutex> lock(groups_mutex_);
  auto it = groups_.find(ranks);
  if (it != groups_.end()) return it->second;
  auto group = create_group(ranks);
  groups_.emplace(ranks, group);
  return group;
}

std::shared_ptr<Communicator> World::world_group() {
  std::vector<int64_t> all(static_cast<size_t>(size_));
  for (int64_t r = 0; r < size_; ++r) all[static_cast<size_t>(r)] = r;
  return new_group(all);
}

std::optional<RankMemoryStats> World::memory_stats() const {
  if (!memory_) return std::nullopt;
  return memory_->stats();
}

void World::reset_peak_memory() {
  if (memory_) memory_->reset_peak();
}

void World::set_memory_location(std::string label) {
  if (memory_) memory_->set_location(std::move(label));
}

void World::enable_memory_accounting(int64_t cap_bytes) {
  memory_ = std::make_shared<RankMemoryAccount>(rank_, cap_bytes);
}

World* current_world() { return t_current_world; }

World& require_current_world(const char* caller) {
  TORCH_CHECK(t_current_world != nullptr, caller,
              ": this thread has no current world; call it inside run_fake_world(n, fn), "
              "with a ScopedCurrentWorld over solo_world(...) or init_world_from_env(...)");
  return *t_current_world;
}

ScopedCurrentWorld::ScopedCurrentWorld(World& world)
    : previous_(t_current_world), memory_(&world.memory_account()) {
  t_current_world = &world;
}

ScopedCurrentWorld::~ScopedCurrentWorld() { t_current_world = previous_; }

void allocate_cublas_workspace(c10::Device device) {
  if (!device.is_cuda()) return;
  const auto options = at::TensorOptions().device(device);
  (void)at::mm(at::ones({8, 8}, options), at::ones({8, 8}, options));
}

}  // namespace dtensor
