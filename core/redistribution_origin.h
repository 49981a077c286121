// Why a redistribution (and so each of its collectives) happens: the origin
// frames that explicit APIs and sharding propagation open around the
// redistributions they start. Collectives issued inside a frame carry its
// CollectiveOrigin (layout/collective_origin.h) in their CollectiveEvent.
//   { ExplicitOriginScope scope(origin_cause::kFullTensor, "DTensor::full_tensor");
//     ... redistribute_local(...) ... }   // its all_gathers say "explicit full_tensor"
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/collective_event.h"
#include "core/dtensor_spec.h"
#include "layout/collective_origin.h"

namespace dtensor {

// Note [Collective origins]
// Every collective core/ issues is a step of a redistribution that someone
// decided: the user through an API (redistribute, full_tensor, a TP style's
// boundary, distribute_tensor, from_local's run_check, a gradient of those)
// or sharding propagation (an op's rule wanted an input laid out otherwise).
// The decider opens an OriginFrame on its thread around the redistribution;
// redistribute_local fills in the placements and the step being run; the
// Communicator asks the thread's frame for the origin only when it builds an
// event, i.e. only when an observer (CommDebugMode, a counter, a test) is
// registered (Note [Events only when observed] in backends/communicator.cc).
// With nobody observing, a frame costs a thread-local pointer swap and a few
// pointer stores: no strings, no allocation. The dispatcher opens its frame
// only on the path that redistributes, so an op whose inputs already fit pays
// nothing at all.
// Nesting: the generic DTensor::redistribute never overrides a frame
// (full_tensor calls redistribute: the user called full_tensor); a named
// explicit API overrides an explicit frame (a TP style's boundary runs
// inside distribute_module's hook: the style is the more precise answer);
// an implicit frame always opens (an op dispatched inside an explicit API is
// still sharding propagation's decision); an explicit API called inside an
// implicit frame (a rule or local kernel redistributing) stays attributed to
// the op.

/// The redistribution in progress on this thread; see Note [Collective origins].
class OriginFrame : public CollectiveOriginSource {
 public:
  OriginFrame(const OriginFrame&) = delete;
  OriginFrame& operator=(const OriginFrame&) = delete;

  /// The innermost installed frame of this thread, or nullptr.
  static OriginFrame* current();

  std::shared_ptr<const CollectiveOrigin> origin() const override;
  bool is_explicit() const { return is_explicit_; }
  const char* cause() const { return cause_; }
  std::string_view op() const { return op_; }
  /// Implicit frames: the op's tensor input being redistributed; else -1.
  int64_t input_index() const { return input_index_; }

  // Filled by whoever runs the redistribution (redistribute_local,
  // distribute_tensor, run_check); pointers must outlive their use: see
  // RedistributionProgress.
  const Placements* from = nullptr;
  const Placements* to = nullptr;
  int mesh_dim = -1;
  const Placement* step_from = nullptr;
  const Placement* step_to = nullptr;

 protected:
  OriginFrame(bool is_explicit, const char* cause, std::string_view op, int64_t input_index,
              const std::vector<StrategyChoice>* choices, bool weak);
  ~OriginFrame() override;

 private:
  bool is_explicit_;
  const char* cause_;
  std::string_view op_;
  int64_t input_index_;
  const std::vector<StrategyChoice>* choices_;  // per mesh dim, or nullptr
  OriginFrame* previous_ = nullptr;
  bool installed_ = false;
};

/// An explicit API's frame. A named API (full_tensor, a TP style,
/// distribute_module, distribute_tensor, ...) is installed unless an
/// implicit frame is current, so the innermost named API wins (a style's
/// boundary inside distribute_module's hook); a `weak` one (the generic
/// DTensor::redistribute) only when no frame is current, so the API that
/// called it keeps the cause. `op` must outlive the scope.
/// Example: ExplicitOriginScope scope(origin_cause::kFullTensor, "DTensor::full_tensor");
class ExplicitOriginScope : public OriginFrame {
 public:
  ExplicitOriginScope(const char* cause, std::string_view op, bool weak = false)
      : OriginFrame(/*is_explicit=*/true, cause, op, -1, nullptr, weak) {}
};

/// Sharding propagation's frame around redistributing input `input_index` of
/// `op` (always installed). `op` and `choices` must outlive the scope.
class ImplicitOriginScope : public OriginFrame {
 public:
  ImplicitOriginScope(std::string_view op, int64_t input_index, const std::vector<StrategyChoice>* choices)
      : OriginFrame(/*is_explicit=*/false, origin_cause::kImplicit, op, input_index, choices, /*weak=*/false) {}
};

/// What an autograd node remembers of the explicit frame current when its
/// forward ran, so that its backward redistribution names the same API
/// ("ColwiseParallel ... (input) backward"). Empty when none was current.
struct CapturedOrigin {
  const char* cause = nullptr;
  std::string op;
  /// The frame current now, when explicit; else empty.
  static CapturedOrigin capture();
};

/// The frame a backward node opens: the captured API with " backward"
/// appended, or (`fallback_cause`, `fallback_op`) when nothing was captured.
class BackwardOriginScope {
 public:
  BackwardOriginScope(const CapturedOrigin& captured, const char* fallback_cause, const char* fallback_op);

 private:
  std::string op_;
  ExplicitOriginScope scope_;
};

/// Records, in the current frame (if any), the redistribution `from` -> `to`
/// running now, and restores the previous values when destroyed. step()
/// names the one-mesh-dim step being run.
class RedistributionProgress {
 public:
  RedistributionProgress(const Placements& from, const Placements& to);
  ~RedistributionProgress();
  RedistributionProgress(const RedistributionProgress&) = delete;
  RedistributionProgress& operator=(const RedistributionProgress&) = delete;
  void step(int mesh_dim, const Placement& from, const Placement& to);

 private:
  OriginFrame* frame_;
  const Placements* from_ = nullptr;
  const Placements* to_ = nullptr;
  int mesh_dim_ = -1;
  const Placement* step_from_ = nullptr;
  const Placement* step_to_ = nullptr;
};

}  // namespace dtensor
