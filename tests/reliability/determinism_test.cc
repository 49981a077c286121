// Determinism of the fake world: the example Transformer's tensor+data
// parallel training steps give bit-identical losses and parameters on every
// run, with extra busy threads competing for the 2 cores, and with random
// delays injected into every collective so that ranks interleave differently.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <optional>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "examples/models/transformer_training.h"

namespace dtensor {
namespace {

// Everything one run produced, per rank: the loss bits of every step and
// every parameter's local shard after the last step.
struct RunResult {
  std::vector<std::vector<double>> losses;                     // [rank][step]
  std::vector<std::map<std::string, at::Tensor>> parameters;   // [rank][name]
};

// Sleeps a random few microseconds on every collective of its rank, so that
// runs interleave the rank threads differently.
class JitterObserver : public CollectiveObserver {
 public:
  explicit JitterObserver(uint64_t seed) : rng_(seed) {}
  void on_collective(const CollectiveEvent&) override {
    const int us = std::uniform_int_distribution<int>(0, 300)(rng_);
    if (us > 150) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::microseconds(us));
  }

 private:
  std::mt19937 rng_;
};

RunResult train(int64_t world_size, std::vector<int64_t> mesh_shape, int steps, uint64_t jitter_seed) {
  RunResult result;
  result.losses.resize(static_cast<size_t>(world_size));
  result.parameters.resize(static_cast<size_t>(world_size));
  run_fake_world(world_size, [&](World& world) {
    std::optional<JitterObserver> jitter;
    ObserverList::Registration registration;
    if (jitter_seed != 0) {
      jitter.emplace(jitter_seed * 131 + static_cast<uint64_t>(world.rank()));
      registration = world.observers().add(&*jitter);
    }
    examples::TrainingConfig config;
    config.mesh_shape = mesh_shape;
    examples::TransformerTrainer trainer(config);
    auto& losses = result.losses[static_cast<size_t>(world.rank())];
    for (int s = 0; s < steps; ++s) losses.push_back(trainer.step());
    auto& params = result.parameters[static_cast<size_t>(world.rank())];
    for (const auto& item : trainer.model().named_parameters()) {
      const at::Tensor& p = item.value();
      params[item.key()] = (is_dtensor(p) ? DTensor(p).local_tensor() : p).detach().clone();
    }
  });
  return result;
}

// "" when bit-identical, else the first difference.
std::string difference(const RunResult& a, const RunResult& b) {
  for (size_t r = 0; r < a.losses.size(); ++r) {
    if (a.losses[r].size() != b.losses[r].size()) return "rank " + std::to_string(r) + ": step count";
    for (size_t s = 0; s < a.losses[r].size(); ++s) {
      if (std::memcmp(&a.losses[r][s], &b.losses[r][s], sizeof(double)) != 0) {
        return "rank " + std::to_string(r) + " step " + std::to_string(s) + " loss " +
               std::to_string(a.losses[r][s]) + " vs " + std::to_string(b.losses[r][s]);
      }
    }
    if (a.parameters[r].size() != b.parameters[r].size()) return "rank " + std::to_string(r) + ": parameters";
    for (const auto& [name, t] : a.parameters[r]) {
      const at::Tensor& u = b.parameters[r].at(name);
      // Bitwise: equal() would call -0.0 == 0.0 equal and NaN unequal.
      if (t.sizes() != u.sizes() || t.scalar_type() != u.scalar_type() ||
          std::memcmp(t.contiguous().data_ptr(), u.contiguous().data_ptr(), t.nbytes()) != 0) {
        return "rank " + std::to_string(r) + " parameter " + name;
      }
    }
  }
  return "";
}

// Busy threads competing with the rank threads while they live.
class Stress {
 public:
  explicit Stress(int threads) {
    for (int i = 0; i < threads; ++i) {
      workers_.emplace_back([this, i] {
        std::mt19937 rng(static_cast<unsigned>(i));
        volatile double sink = 0;
        while (!stop_.load(std::memory_order_relaxed)) {
          for (int k = 0; k < 20000; ++k) sink = sink + std::sqrt(static_cast<double>(rng() % 1000));
          if (rng() % 4 == 0) std::this_thread::yield();
        }
      });
    }
  }
  ~Stress() {
    stop_ = true;
    for (auto& t : workers_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

TEST(DeterminismTest, TransformerTrainingIsBitIdenticalAcrossRunsStressAndJitter) {
  constexpr int kSteps = 2;
  const RunResult reference = train(4, {2, 2}, kSteps, /*jitter_seed=*/0);
  ASSERT_EQ(reference.losses[0].size(), static_cast<size_t>(kSteps));
  // Replicas agree: every rank reports the same global loss.
  for (const auto& losses : reference.losses) EXPECT_EQ(losses, reference.losses[0]);
  EXPECT_EQ(difference(reference, train(4, {2, 2}, kSteps, 0)), "") << "plain rerun";
  {
    Stress stress(/*threads=*/6);
    EXPECT_EQ(difference(reference, train(4, {2, 2}, kSteps, 0)), "") << "under stress";
  }
  for (uint64_t seed : {1, 2}) {
    EXPECT_EQ(difference(reference, train(4, {2, 2}, kSteps, seed)), "") << "jitter seed " << seed;
  }
  {
    Stress stress(4);
    EXPECT_EQ(difference(reference, train(4, {2, 2}, kSteps, 3)), "") << "stress and jitter";
  }
}

TEST(DeterminismTest, PureTensorParallelTrainingIsBitIdenticalUnderJitter) {
  const RunResult reference = train(4, {4}, 2, 0);
  Stress stress(4);
  EXPECT_EQ(difference(reference, train(4, {4}, 2, 7)), "");
}

}  // namespace
}  // namespace dtensor
