// Random numbers for DTensors: the per-rank RNG mode, seeding, and the local
// generation behind dtensor::rand / dtensor::randn (core/factories.h).
//   dtensor::manual_seed(7);                               // every rank, same seed
//   DTensor a = dtensor::randn({5, 3}, mesh, {Shard(0)});  // == torch::randn({5, 3}) after
//                                                          // torch::manual_seed(7)
//   RandomModeGuard offset(RandomMode::kOffsetBased);      // only local shards from here on
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/TensorOptions.h>

#include <cstdint>
#include <optional>

#include "core/dtensor_spec.h"

namespace dtensor {

// Note [DTensor random modes]
// Random DTensors must satisfy two rules whatever the mode: ranks holding the
// same block (replicas) get the same values, and different shards are
// disjoint parts of one random tensor (never copies of one another). Both
// modes draw from this rank's World::generator(), which every rank seeds
// identically (manual_seed below) and advances identically because SPMD code
// issues the same random calls on every rank.
//
// - kSingleDeviceExact (the default): each call draws the *full* global tensor
//   with at::rand / at::randn from the World generator, exactly as
//   torch::rand / torch::randn draw from the default CPU generator, and keeps
//   this rank's block. So after dtensor::manual_seed(s), any sequence of
//   dtensor::rand / randn calls on any mesh with any placements gives, through
//   full_tensor(), exactly the tensors that torch::manual_seed(s) and the same
//   torch::rand / torch::randn calls give on one device. This is beyond
//   PyTorch (whose sharded randn differs from single-device randn) and is the
//   default because this project's main use is testing sharding logic against
//   a single-device reference. Cost: every rank generates the whole tensor
//   (O(global numel) time and transient memory per rank, on CPU, then copied
//   to the mesh device), so it does not scale to huge tensors.
// - kOffsetBased: like PyTorch's OffsetBasedRNGTracker, only the local block
//   is generated. Each call draws one 64-bit key from the World generator;
//   element i (row-major linear index in the global tensor) takes the
//   Philox4x32-10 output for (key, counter = i). Values therefore depend only
//   on the seed, the call sequence and the global index: replicas agree,
//   shards differ, and full_tensor() is the same for every mesh size and
//   placement (but differs from torch::randn). Cost: O(local numel). Use it
//   for big tensors, in solo worlds with thousands of ranks, or for timing.
// Both modes are deterministic under a seed. Ranks must use the same mode for
// the same call (the mode is SPMD state, like the seed). On the meta device
// no values exist: nothing is drawn and the generator does not advance.
enum class RandomMode {
  kSingleDeviceExact,  // full_tensor() == torch::rand/randn under the same seed
  kOffsetBased,        // only the local block is generated (Philox by global index)
};

/// "single_device_exact" or "offset_based".
const char* random_mode_name(RandomMode mode);

/// The calling thread's (i.e. this rank's) default mode for dtensor::rand and
/// dtensor::randn; kSingleDeviceExact unless set. See Note [DTensor random modes].
RandomMode random_mode();

/// Sets this thread's default mode. In a fake world every rank thread starts
/// with kSingleDeviceExact; call it on every rank (SPMD). Example:
/// `set_random_mode(RandomMode::kOffsetBased);`
void set_random_mode(RandomMode mode);

/// Sets this thread's mode for its lifetime and restores the previous one.
///   { RandomModeGuard g(RandomMode::kOffsetBased); auto x = randn({1 << 20}, mesh, {Shard(0)}); }
class RandomModeGuard {
 public:
  explicit RandomModeGuard(RandomMode mode);
  ~RandomModeGuard();
  RandomModeGuard(const RandomModeGuard&) = delete;
  RandomModeGuard& operator=(const RandomModeGuard&) = delete;

 private:
  RandomMode previous_;
};

/// Seeds this rank's World::generator() (the current world's; throws outside
/// a world). Call it with the same seed on every rank, like
/// torch.manual_seed on every process. It does not touch LibTorch's global
/// default generator, which the rank threads of a fake world share. Example:
/// `dtensor::manual_seed(7);` then dtensor::randn matches torch::manual_seed(7); torch::randn.
void manual_seed(uint64_t seed);

/// The seed this rank's World generator was last seeded with.
uint64_t initial_seed();

/// Per-call options of dtensor::rand / dtensor::randn.
struct RandomOptions {
  /// Overrides this thread's random_mode() for this call.
  std::optional<RandomMode> mode;
  /// Draw from this CPU generator instead of the World generator. Every rank
  /// must pass a generator in the same state (e.g. seeded alike), or replicas
  /// disagree.
  std::optional<at::Generator> generator;
};

namespace detail {

/// Which distribution a random factory draws.
enum class RandomDistribution {
  kUniform,  // [0, 1), as torch::rand
  kNormal,   // N(0, 1), as torch::randn
};

/// This rank's block of a random tensor laid out as `spec` (whose placements
/// must not be Partial), as a plain tensor on `local_options`' device with
/// `spec.meta.dtype`. Advances the generator identically on every rank.
/// Throws c10::Error, naming `op`, for a dtype the distribution does not
/// support in that mode.
at::Tensor random_local(RandomDistribution distribution, const DTensorSpec& spec,
                        const at::TensorOptions& local_options, const RandomOptions& options,
                        const char* op);

/// Writes this rank's block of `t.uniform_(a, b)` (kUniform: from, to) or
/// `t.normal_(a, b)` (kNormal: mean, std) of the global tensor `spec`
/// describes into `into` (this rank's local tensor, floating dtype), with
/// the values one device draws from the same generator state: the
/// kSingleDeviceExact mode of a random fill. A rank holding the whole tensor
/// draws straight into `into`; the others draw the whole tensor and copy
/// their block. Advances the generator as random_local does (on the meta
/// device: draws nothing, advances nothing).
void exact_fill_local(RandomDistribution distribution, double a, double b, const DTensorSpec& spec,
                      const RandomOptions& options, const char* op, at::Tensor& into);

}  // namespace detail
}  // namespace dtensor
