// CommDebugMode: sessions, event recording, queries and dumps.
#include "debug/comm_debug_mode.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <sstream>

#include "backends/world.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "debug/fake_world_trace.h"
#include "debug/internal/record_function_listener.h"
#include "trace/trace_json.h"
#include "debug/tracing_table.h"

namespace dtensor::debug {

namespace {

trace::MeshRecord record_of(const DeviceMesh& mesh) {
  std::ostringstream device;
  device << mesh.device();
  return trace::MeshRecord{mesh.shape(), mesh.dim_names(), device.str()};
}

trace::MeshRecord record_of(const MeshDimTag& tag) {
  return trace::MeshRecord{tag.mesh_shape, tag.mesh_dim_names, tag.device};
}

bool same_mesh(const trace::MeshRecord& a, const trace::MeshRecord& b) {
  return a.shape == b.shape && a.dim_names == b.dim_names && a.device == b.device;
}

int64_t num_ranks(const trace::MeshRecord& m) {
  int64_t n = 1;
  for (int64_t s : m.shape) n *= s;
  return n;
}

// The mesh dim of `primary` a collective ran over, from the tag core/collectives
// put on it: its own dim when it ran on a mesh shaped and named as the primary
// one, else the primary dim of the same name (a sub-mesh such as mesh["tp"]);
// -1 when untagged (a Communicator called directly) or not a dim of `primary`.
void resolve_mesh_dim(trace::CollectiveRecord& r, const std::shared_ptr<const MeshDimTag>& tag,
                      const std::optional<trace::MeshRecord>& primary) {
  if (!tag) return;
  r.mesh_dim_name = tag->dim_name();
  if (!primary) return;
  if (same_mesh(record_of(*tag), *primary)) {
    r.mesh_dim = tag->mesh_dim;
    return;
  }
  if (r.mesh_dim_name.empty()) return;
  const auto& names = primary->dim_names;
  auto it = std::find(names.begin(), names.end(), r.mesh_dim_name);
  if (it != names.end()) r.mesh_dim = it - names.begin();
}

}  // namespace

// Everything registered while a session runs; destroyed (in reverse order of
// construction) when it ends.
// Note [Memory location]
// On a world that counts memory (World::memory_stats(), fake and solo), a
// session resets the rank's peak when it starts and keeps the world's memory
// location at "<module> <phase>" of the module tracker, updated at every
// operator call (a RecordFunction listener): the peak then says where it was
// reached ("Transformer.layers.1.attention backward"). The stats are taken
// when the session ends (trace::CommTrace::memory) and the location cleared.
class CommDebugMode::Session : public internal::RecordFunctionListener {
 public:
  Session(CommDebugMode* mode, World& world, ModuleTracker::Guard tracker_guard, bool local_ops)
      : mode_(mode),
        world_(world),
        record_local_ops_(local_ops),
        track_memory_(world.memory_stats().has_value()),
        tracker_guard_(std::move(tracker_guard)),
        ops_(mode),
        local_ops_(local_ops || track_memory_
                       ? std::make_unique<internal::ScopedRecordFunctionListener>(this, /*ops=*/true)
                       : nullptr),
        collectives_(world.observers().add(mode)) {
    if (track_memory_) {
      world_.reset_peak_memory();
      update_location();
    }
  }
  ~Session() override {
    if (!track_memory_) return;
    if (std::optional<RankMemoryStats> s = world_.memory_stats()) {
      std::lock_guard<std::mutex> lock(mode_->mutex_);
      mode_->memory_ = trace::RankMemoryRecord{s->peak_bytes, s->current_bytes, s->cap_bytes, s->peak_location};
    }
    world_.set_memory_location("");
  }

  void on_backward_node(int64_t, bool) override {}
  void on_op(const std::string& name, c10::ArrayRef<const c10::IValue> inputs) override {
    if (track_memory_) update_location();
    if (record_local_ops_) mode_->record_local_op(name, inputs);
  }

 private:
  void update_location() {
    std::string label = mode_->tracker_.current_module() + " " + phase_name(mode_->tracker_.current_phase());
    if (label == location_) return;
    location_ = label;
    world_.set_memory_location(std::move(label));
  }

  CommDebugMode* mode_;
  World& world_;
  const bool record_local_ops_;
  const bool track_memory_;
  std::string location_;
  ModuleTracker::Guard tracker_guard_;
  ScopedOpObserver ops_;
  std::unique_ptr<internal::ScopedRecordFunctionListener> local_ops_;
  ObserverList::Registration collectives_;
};

CommDebugMode::Guard::Guard(Guard&& other) noexcept : mode_(other.mode_), alive_(std::move(other.alive_)) {
  other.mode_ = nullptr;
}

CommDebugMode::Guard& CommDebugMode::Guard::operator=(Guard&& other) noexcept {
  if (this != &other) {
    release();
    mode_ = other.mode_;
    alive_ = std::move(other.alive_);
    other.mode_ = nullptr;
  }
  return *this;
}

void CommDebugMode::Guard::release() {
  if (mode_ != nullptr && !alive_.expired()) mode_->exit();
  mode_ = nullptr;
}

CommDebugMode::CommDebugMode(CommDebugModeOptions options) : options_(options) {}

CommDebugMode::CommDebugMode(FakeWorldTrace* world_trace, CommDebugModeOptions options)
    : options_(options), world_trace_(world_trace) {}

CommDebugMode::~CommDebugMode() { exit(); }

World& CommDebugMode::begin(const char* caller) {
  TORCH_CHECK(session_ == nullptr, caller,
              ": already entered; let the previous guard end first "
              "(nested modes must be distinct CommDebugMode objects)");
  World& world = require_current_world(caller);
  std::lock_guard<std::mutex> lock(mutex_);
  rank_ = world.rank();
  world_size_ = world.size();
  epoch_ = std::chrono::steady_clock::now();
  raw_.clear();
  ops_.clear();
  meshes_.clear();
  memory_.reset();
  return world;
}

CommDebugMode::Guard CommDebugMode::enter() {
  World& world = begin("CommDebugMode::enter");
  session_ = std::make_unique<Session>(this, world, tracker_.enter(), options_.record_local_ops);
  return Guard(this, alive_);
}

CommDebugMode::Guard CommDebugMode::enter(torch::nn::Module& root, std::string root_name) {
  World& world = begin("CommDebugMode::enter");
  session_ = std::make_unique<Session>(this, world, tracker_.enter(root, std::move(root_name)),
                                       options_.record_local_ops);
  return Guard(this, alive_);
}

void CommDebugMode::exit() {
  if (session_ == nullptr) return;
  session_.reset();
  if (world_trace_ != nullptr) world_trace_->add(trace());
}

double CommDebugMode::now_us() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - epoch_).count();
}

void CommDebugMode::on_collective(const CollectiveEvent& event) {
  // The tracker answers for the calling thread: backward on this rank's
  // thread is attributed; other threads see no module (Global).
  std::string module = tracker_.current_module();
  const trace::Phase phase = tracker_.current_phase();
  std::lock_guard<std::mutex> lock(mutex_);
  raw_.push_back(Raw{event, std::move(module), phase, now_us()});
}

void CommDebugMode::learn_mesh_locked(const DeviceMesh& mesh) {
  if (std::find(meshes_.begin(), meshes_.end(), mesh) == meshes_.end()) meshes_.push_back(mesh);
}

void CommDebugMode::on_dtensor_op(const OpCall& call) {
  trace::OpRecord op;
  op.name = call.name;
  op.module = tracker_.current_module();
  op.phase = tracker_.current_phase();
  op.dtensor = true;
  for (const DTensorSpec& spec : call.inputs) {
    op.input_shapes.push_back(spec.meta.shape);
    op.input_sharding.push_back(to_string(spec.placements));
  }
  op.device_mesh = call.mesh.to_string();
  std::lock_guard<std::mutex> lock(mutex_);
  op.rank = rank_;
  learn_mesh_locked(call.mesh);
  ops_.push_back(std::move(op));
}

void CommDebugMode::record_local_op(const std::string& name, c10::ArrayRef<const c10::IValue> inputs) {
  trace::OpRecord op;
  op.name = name;
  op.dtensor = false;
  for (const c10::IValue& v : inputs) {
    if (!v.isTensor()) continue;
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) continue;
    if (is_dtensor(t)) return;    // a DTensor op: on_dtensor_op records it with its placements
    if (t.is_nested()) continue;  // no sizes()
    op.input_shapes.push_back(t.sizes().vec());
  }
  op.module = tracker_.current_module();
  op.phase = tracker_.current_phase();
  std::lock_guard<std::mutex> lock(mutex_);
  op.rank = rank_;
  ops_.push_back(std::move(op));
}

trace::CommTrace CommDebugMode::trace() const {
  trace::CommTrace t;
  t.modules = tracker_.modules();
  std::vector<DeviceMesh> tracker_meshes = tracker_.meshes();
  std::lock_guard<std::mutex> lock(mutex_);
  t.rank = rank_;
  t.world_size = world_size_;
  t.epoch_us = std::chrono::duration<double, std::micro>(epoch_.time_since_epoch()).count();
  t.operations = ops_;
  if (memory_) t.memory[rank_] = *memory_;
  // Every mesh seen: of DTensor ops, of tracked modules' DTensors, of the
  // collectives themselves (a program that only redistributes).
  std::vector<trace::MeshRecord> meshes;
  auto learn = [&meshes](const trace::MeshRecord& m) {
    for (const trace::MeshRecord& known : meshes) {
      if (same_mesh(known, m)) return;
    }
    meshes.push_back(m);
  };
  for (const DeviceMesh& m : meshes_) learn(record_of(m));
  for (const DeviceMesh& m : tracker_meshes) learn(record_of(m));
  for (const Raw& raw : raw_) {
    if (raw.event.mesh) learn(record_of(*raw.event.mesh));
  }
  // The primary mesh is the largest one seen; the first of equal size wins.
  std::stable_sort(meshes.begin(), meshes.end(), [](const trace::MeshRecord& a, const trace::MeshRecord& b) {
    return num_ranks(a) > num_ranks(b);
  });
  std::optional<trace::MeshRecord> primary;
  if (!meshes.empty()) primary = meshes.front();
  t.mesh = primary;
  for (size_t i = 0; i < raw_.size(); ++i) {
    t.collectives.push_back(to_record(raw_[i], static_cast<int64_t>(i)));
    resolve_mesh_dim(t.collectives.back(), raw_[i].event.mesh, primary);
  }
  return t;
}

trace::CollectiveRecord CommDebugMode::to_record(const Raw& raw, int64_t seq) {
  const CollectiveEvent& e = raw.event;
  trace::CollectiveRecord r;
  r.rank = e.global_rank;
  r.seq = seq;
  r.kind = collective_name(e.kind);
  r.module = raw.module;
  r.phase = raw.phase;
  r.bytes = e.input_bytes;
  r.output_bytes = e.output_bytes;
  r.group = e.group_ranks;
  r.input_shapes = e.input_shapes;
  r.output_shapes = e.output_shapes;
  r.dtype = c10::toString(e.dtype);
  if (e.reduce_op) r.reduce_op = reduce_op_name(*e.reduce_op);
  r.ts_us = raw.ts_us;
  if (e.origin) r.origin = *e.origin;
  return r;
}

std::vector<CollectiveEvent> CommDebugMode::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CollectiveEvent> out;
  out.reserve(raw_.size());
  for (const Raw& raw : raw_) out.push_back(raw.event);
  return out;
}

trace::KindCounts CommDebugMode::get_comm_counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  trace::KindCounts counts;
  for (const Raw& raw : raw_) ++counts[collective_name(raw.event.kind)];
  return counts;
}

int64_t CommDebugMode::get_total_counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(raw_.size());
}

trace::ModuleCounts CommDebugMode::get_comm_module_counts() const { return comm_module_counts(trace()); }

std::map<std::string, Placements> CommDebugMode::get_sharding_info() const {
  return tracker_.sharding_info();
}

std::map<std::string, std::map<std::string, at::Tensor>> CommDebugMode::get_parameter_info() const {
  return tracker_.parameter_info();
}

std::string CommDebugMode::generate_comm_debug_tracing_table(int noise_level) const {
  return comm_debug_tracing_table(trace(), noise_level, stdout_is_terminal());
}

void CommDebugMode::log_comm_debug_tracing_table_to_file(const std::string& path, int noise_level) const {
  trace::write_text_file(path, comm_debug_tracing_table(trace(), noise_level, /*color=*/false));
}

void CommDebugMode::generate_json_dump(const std::string& path, int noise_level) const {
  trace::write_text_file(path, comm_trace_to_json(trace(), noise_level));
}

void CommDebugMode::generate_chrome_trace(const std::string& path, const ChromeTraceOptions& options) const {
  write_chrome_trace(path, trace(), options);
}

}  // namespace dtensor::debug
