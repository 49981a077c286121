// run_fake_world: the shared state of one fake world, the per-rank World that
// connects to it, and the rank threads with their failure handling.
#include "backends/fake/fake_world.h"

#include <c10/util/Exception.h>
#include <torch/version.h>

#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/fake/fake_communicator.h"
#include "backends/fake/rendezvous.h"

#if TORCH_VERSION_MAJOR >= 2
#include <c10/core/AutogradState.h>
#endif

namespace dtensor {
namespace {

// What all ranks of one fake world share: health and one rendezvous per group.
class FakeWorldState {
 public:
  explicit FakeWorldState(int64_t world_size)
      : status_(std::make_shared<detail::FakeWorldStatus>(world_size)) {}

  detail::FakeWorldStatus& status() { return *status_; }

  // The rendezvous of the group over `ranks` (in that order); every member
  // asking with the same vector gets the same one.
  std::shared_ptr<detail::FakeRendezvous> rendezvous(const std::vector<int64_t>& ranks) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::shared_ptr<detail::FakeRendezvous>& slot = groups_[ranks];
    if (!slot) slot = std::make_shared<detail::FakeRendezvous>(ranks, status_);
    return slot;
  }

 private:
  std::shared_ptr<detail::FakeWorldStatus> status_;
  std::mutex mutex_;
  std::map<std::vector<int64_t>, std::shared_ptr<detail::FakeRendezvous>> groups_;
};

class FakeWorld final : public World {
 public:
  FakeWorld(int64_t rank, int64_t size, const FakeWorldOptions& options, FakeWorldState& state)
      : World(rank, size, options.device, options.timeout), state_(state) {
    enable_memory_accounting(options.memory_cap_bytes);
  }

  BackendKind backend() const override { return BackendKind::kFake; }

 protected:
  std::shared_ptr<Communicator> create_group(const std::vector<int64_t>& ranks) override {
    return std::make_shared<detail::FakeCommunicator>(ranks, rank(), shared_observers(),
                                                      state_.rendezvous(ranks), timeout());
  }

 private:
  FakeWorldState& state_;
};

// Note [CUDA ranks]
// LibTorch's autograd engine runs the backward work of one GPU on one device
// thread shared by every thread of the process, so rank threads blocking in a
// collective during backward would wait for each other there forever. From
// LibTorch 2.0 a thread can opt out (PyTorch's MultiThreadedProcessGroup does
// the same): its backward then runs on the calling thread. LibTorch 1.13 has
// no such switch and no CUDA here; there the fake world is CPU only.
void prepare_rank_thread() {
#if TORCH_VERSION_MAJOR >= 2
  c10::AutogradState::get_tls_state().set_multithreading_enabled(false);
#endif
}

void run_rank(FakeWorldState& state, int64_t rank, int64_t world_size,
              const std::function<void(World&)>& fn, const FakeWorldOptions& options) {
  try {
    prepare_rank_thread();
    FakeWorld world(rank, world_size, options, state);
    world.manual_seed(options.seed);
    ScopedCurrentWorld current(world);
    fn(world);
  } catch (const PeerFailureError& e) {
    return state.status().record_failure(rank, e.what_without_backtrace(), /*secondary=*/true);
  } catch (const c10::Error& e) {
    return state.status().record_failure(rank, e.what_without_backtrace(), /*secondary=*/false);
  } catch (const std::exception& e) {
    return state.status().record_failure(rank, e.what(), /*secondary=*/false);
  } catch (...) {
    return state.status().record_failure(rank, "an exception of unknown type", /*secondary=*/false);
  }
  state.status().mark_exited(rank);
}

}  // namespace

void run_fake_world(int64_t world_size, const std::function<void(World&)>& fn,
                    const FakeWorldOptions& options) {
  TORCH_CHECK(world_size >= 1, "run_fake_world: world_size must be at least 1, got ", world_size);
  TORCH_CHECK(options.timeout.count() > 0, "run_fake_world: options.timeout must be positive, got ",
              options.timeout.count(), " ms");
  TORCH_CHECK(options.memory_cap_bytes >= 0,
              "run_fake_world: options.memory_cap_bytes must be 0 (no cap) or positive, got ",
              options.memory_cap_bytes);
  TORCH_CHECK(fn, "run_fake_world: fn is empty");
  FakeWorldState state(world_size);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(world_size));
  try {
    for (int64_t rank = 0; rank < world_size; ++rank) {
      threads.emplace_back(run_rank, std::ref(state), rank, world_size, std::cref(fn),
                           std::cref(options));
    }
  } catch (const std::exception& e) {
    // Could not start every rank: abort the started ones, then report.
    state.status().record_failure(static_cast<int64_t>(threads.size()),
                                  std::string("could not start its thread: ") + e.what(),
                                  /*secondary=*/false);
  }
  for (std::thread& thread : threads) thread.join();
  state.status().rethrow_failure();
}

}  // namespace dtensor
