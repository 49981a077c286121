// CommDebugMode: counts and records the collectives this rank issues while it
// is entered, per module and phase, like PyTorch's
// torch.distributed.tensor.debug.CommDebugMode.
//   debug::CommDebugMode comm;
//   { auto guard = comm.enter(*model); auto y = dtensor::nn::call(model, x); y.sum().backward(); }
//   comm.get_comm_counts();          // {"all_reduce": 1}
//   comm.get_comm_module_counts();   // {"Global": {"forward": {"all_reduce": 1}, ...}, "MLPModule": ...}
//   std::cout << comm.generate_comm_debug_tracing_table(/*noise_level=*/1);
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backends/collective_event.h"
#include "backends/world.h"
#include "core/device_mesh.h"
#include "core/dispatch/op_observer.h"
#include "layout/placement.h"
#include "debug/chrome_trace.h"
#include "debug/module_tracker.h"
#include "trace/trace_model.h"

namespace dtensor::debug {

class FakeWorldTrace;

/// Options of CommDebugMode.
struct CommDebugModeOptions {
  /// Also record operations on plain (local) tensors, through a thread-local
  /// RecordFunction callback, for noise levels 2 and 3. Off by default: it
  /// sees every aten call on this thread, including the local compute inside
  /// DTensor ops (as PyTorch's level 2 does) but also the backend's own data
  /// movement (which ranks of a fake world run varies from run to run).
  bool record_local_ops = false;
};

// Note [CommDebugMode sessions]
// Per rank: enter it on every rank you want traced (in a fake world, inside
// the rank function); it observes the calling thread's World (collectives),
// its DTensor op calls (core/dispatch/op_observer.h) and its module scopes
// (ModuleTracker). Counts are kept after the guard ends; entering again resets
// them, as in PyTorch. Several modes may be entered at once (nested): each
// sees every event. Enter and end a session on the same thread. Collectives
// issued by backward on another thread (not the case on CPU) are counted, but
// attributed to Global.

/// Traces one rank's collectives. Not copyable; one session at a time.
class CommDebugMode : public CollectiveObserver, public OpObserver {
 public:
  /// Ends the session when destroyed. Movable. A guard that outlives its
  /// mode does nothing.
  class Guard {
   public:
    Guard(CommDebugMode* mode, std::weak_ptr<int> alive) : mode_(mode), alive_(std::move(alive)) {}
    Guard(Guard&& other) noexcept;
    Guard& operator=(Guard&& other) noexcept;
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() { release(); }

   private:
    void release();
    CommDebugMode* mode_;
    std::weak_ptr<int> alive_;
  };

  explicit CommDebugMode(CommDebugModeOptions options = {});
  /// Publishes this rank's trace to `world_trace` (not owned) whenever a
  /// session ends. Example: `CommDebugMode comm(&world_trace);` in each rank.
  explicit CommDebugMode(FakeWorldTrace* world_trace, CommDebugModeOptions options = {});
  ~CommDebugMode() override;
  CommDebugMode(const CommDebugMode&) = delete;
  CommDebugMode& operator=(const CommDebugMode&) = delete;

  /// Resets everything recorded and starts observing this rank. `root` (a
  /// module owned by a shared_ptr, e.g. `*model` of a ModuleHolder) names
  /// modules from its named_modules(); `root_name` defaults to its class name
  /// ("MLPModule"). Preconditions: the calling thread has a current world;
  /// not already entered. Example: `auto guard = comm.enter(*model, "MLP");`.
  [[nodiscard]] Guard enter();
  [[nodiscard]] Guard enter(torch::nn::Module& root, std::string root_name = "");
  /// Ends the session (the guard calls it); publishes to the FakeWorldTrace.
  void exit();

  /// Collective name ("all_reduce", ...) -> number issued.
  trace::KindCounts get_comm_counts() const;
  /// Number of collectives issued (barriers included).
  int64_t get_total_counts() const;
  /// fqn -> "forward"/"backward" -> collective -> count; every ancestor
  /// (Global included) counts its descendants' collectives.
  trace::ModuleCounts get_comm_module_counts() const;
  /// "fqn.param" -> placements of the DTensor parameters of entered modules.
  std::map<std::string, Placements> get_sharding_info() const;
  /// fqn -> parameter name -> parameter, for entered modules.
  std::map<std::string, std::map<std::string, at::Tensor>> get_parameter_info() const;

  /// The tracing table (see comm_debug_tracing_table); ANSI colours only when
  /// stdout is a terminal. Levels: 0 module collective counts; 1 + module
  /// type, parameters, DTensor ops except trivial ones; 2 + local ops (only
  /// with record_local_ops); 3 + trivial ops.
  std::string generate_comm_debug_tracing_table(int noise_level = 3) const;
  /// The table without ANSI codes, written to `path`.
  void log_comm_debug_tracing_table_to_file(const std::string& path = "comm_mode_log.txt",
                                            int noise_level = 3) const;
  /// The JSON of trace/comm_trace_schema.md, written to `path`.
  void generate_json_dump(const std::string& path = "comm_mode_log.json", int noise_level = 3) const;
  /// A Chrome trace (one track: this rank), see chrome_trace.h.
  void generate_chrome_trace(const std::string& path, const ChromeTraceOptions& options = {}) const;

  /// Everything recorded, as plain values (see trace_model.h). On worlds
  /// that count memory, trace().memory holds this rank's peak during the
  /// session and where it was reached (See Note [Memory location]).
  trace::CommTrace trace() const;
  /// Every collective issued, in order, as the backend reported it.
  std::vector<CollectiveEvent> events() const;
  /// The module tracker of the current (or last) session.
  const ModuleTracker& module_tracker() const { return tracker_; }

  void on_collective(const CollectiveEvent& event) override;
  void on_dtensor_op(const OpCall& call) override;

 private:
  class Session;
  struct Raw {
    CollectiveEvent event;
    std::string module;
    trace::Phase phase;
    double ts_us;
  };
  World& begin(const char* caller);
  static trace::CollectiveRecord to_record(const Raw& raw, int64_t seq);
  double now_us() const;
  void learn_mesh_locked(const DeviceMesh& mesh);
  void record_local_op(const std::string& name, c10::ArrayRef<const c10::IValue> inputs);

  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // guards check it
  CommDebugModeOptions options_;
  FakeWorldTrace* world_trace_ = nullptr;
  ModuleTracker tracker_;
  std::unique_ptr<Session> session_;
  mutable std::mutex mutex_;
  int64_t rank_ = 0;
  int64_t world_size_ = 1;
  std::chrono::steady_clock::time_point epoch_;
  std::vector<Raw> raw_;
  std::vector<trace::OpRecord> ops_;
  std::vector<DeviceMesh> meshes_;
  std::optional<trace::RankMemoryRecord> memory_;  // See Note [Memory location]
};

}  // namespace dtensor::debug
