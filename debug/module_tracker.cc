// Module tracking: forward scopes, backward attribution by node sequence
// numbers and tensor hooks. See Note [Module tracking].
#include "debug/module_tracker.h"

#include <ATen/SequenceNumber.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/autograd/graph_task.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "debug/internal/record_function_listener.h"

namespace dtensor::debug {
namespace {

constexpr uint64_t kOpen = std::numeric_limits<uint64_t>::max();

bool in_backward() { return torch::autograd::get_current_graph_task_exec_info() != nullptr; }
const void* backward_task() { return torch::autograd::get_current_graph_task_exec_info(); }

std::string strip_impl(std::string name) {
  constexpr std::string_view kImpl = "Impl";
  if (name.size() > kImpl.size() && name.compare(name.size() - kImpl.size(), kImpl.size(), kImpl) == 0) {
    name.resize(name.size() - kImpl.size());
  }
  return name;
}

using WeakTensor = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

}  // namespace

struct ModuleTracker::State : std::enable_shared_from_this<ModuleTracker::State> {
  // One forward of a module: nodes with sequence numbers in [begin, end).
  struct Range {
    uint64_t begin = 0;
    uint64_t end = kOpen;
    std::string fqn;
    int64_t parent = -1;  // enclosing range
  };
  struct Frame {
    torch::nn::Module* module = nullptr;
    std::string fqn;
    bool in_backward = false;
    int64_t range = -1;
  };
  struct Name {
    std::weak_ptr<torch::nn::Module> owner;  // guards against address reuse
    std::string fqn;
  };

  mutable std::mutex mutex;
  bool active = false;
  std::unordered_map<const torch::nn::Module*, Name> names;
  std::vector<trace::ModuleRecord> modules;
  std::unordered_map<std::string, size_t> module_index;
  std::map<std::string, std::map<std::string, at::Tensor>> parameters;
  std::map<std::string, Placements> sharding;
  std::vector<DeviceMesh> meshes;
  std::vector<Frame> forward_stack;
  std::vector<Range> ranges;
  uint64_t session_begin = 0;
  std::vector<std::string> backward_stack;
  const void* task = nullptr;
  std::vector<int64_t> running_nodes;
  // Open ranges of recomputations: (depth of running_nodes when opened, index in ranges).
  std::vector<std::pair<size_t, int64_t>> recompute_anchors;
  std::vector<std::pair<WeakTensor, unsigned>> hooks;

  void reset() {
    names.clear();
    modules.clear();
    module_index.clear();
    parameters.clear();
    sharding.clear();
    meshes.clear();
    forward_stack.clear();
    ranges.clear();
    backward_stack.clear();
    task = nullptr;
    running_nodes.clear();
    recompute_anchors.clear();  // they index `ranges`
    session_begin = at::sequence_number::peek();
  }

  void learn_mesh(const at::Tensor& t) {
    if (!t.defined() || !is_dtensor(t)) return;
    const DeviceMesh& mesh = DTensor(t).device_mesh();
    if (std::find(meshes.begin(), meshes.end(), mesh) == meshes.end()) meshes.push_back(mesh);
  }

  const std::string& parent_of(const std::string& fqn) const {
    static const std::string kGlobal = trace::kGlobalFqn;
    auto it = module_index.find(fqn);
    return it == module_index.end() ? kGlobal : modules[it->second].parent;
  }

  // [fqn's outermost ancestor, ..., fqn] (Global excluded).
  std::vector<std::string> path_to(const std::string& fqn) const {
    std::vector<std::string> path;
    for (std::string at = fqn; at != trace::kGlobalFqn && path.size() <= modules.size(); at = parent_of(at)) {
      path.push_back(at);
    }
    std::reverse(path.begin(), path.end());
    return path;
  }

  bool is_ancestor_or_self(const std::string& a, const std::string& m) const {
    for (const std::string& p : path_to(m)) {
      if (p == a) return true;
    }
    return false;
  }

  std::string name_of(torch::nn::Module& module) {
    auto it = names.find(&module);
    if (it != names.end()) {
      auto owner = it->second.owner.lock();
      if (owner.get() == &module) return it->second.fqn;
    }
    std::string fqn;
    if (!forward_stack.empty()) {
      const Frame& parent = forward_stack.back();
      for (const auto& item : parent.module->named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
        if (item.value().get() == &module) {
          fqn = parent.fqn + "." + item.key();
          break;
        }
      }
    }
    if (fqn.empty()) fqn = ModuleTracker::class_name(module);
    std::weak_ptr<torch::nn::Module> owner;
    try {
      owner = module.shared_from_this();
    } catch (const std::bad_weak_ptr&) {
      // Not owned by a shared_ptr: named again at every entry.
    }
    names[&module] = Name{owner, fqn};
    return fqn;
  }

  void record_module(torch::nn::Module& module, const std::string& fqn, const std::string& parent) {
    if (module_index.count(fqn) > 0) return;
    trace::ModuleRecord record;
    record.fqn = fqn;
    record.module_type = ModuleTracker::module_type(module);
    record.parent = parent;
    for (const auto& item : module.named_parameters(/*recurse=*/false)) {
      const at::Tensor& p = item.value();
      parameters[fqn][item.key()] = p;  // only modules with parameters appear, as in PyTorch
      if (p.defined() && is_dtensor(p)) {
        const Placements& placements = DTensor(p).placements();
        sharding[fqn + "." + item.key()] = placements;
        record.parameters.emplace_back(item.key(), to_string(placements));
        learn_mesh(p);
      }
    }
    module_index[fqn] = modules.size();
    modules.push_back(std::move(record));
  }

  // Innermost module whose forward created node `seq`; "" when unknown.
  std::string module_of_node(int64_t seq) const {
    if (seq < 0) return "";
    const auto s = static_cast<uint64_t>(seq);
    if (s < session_begin) return "";
    auto it = std::upper_bound(ranges.begin(), ranges.end(), s,
                               [](uint64_t v, const Range& r) { return v < r.begin; });
    for (int64_t i = static_cast<int64_t>(it - ranges.begin()) - 1; i >= 0;
         i = ranges[static_cast<size_t>(i)].parent) {
      const Range& r = ranges[static_cast<size_t>(i)];
      if (s >= r.begin && s < r.end) return r.fqn;
    }
    return trace::kGlobalFqn;
  }

  void sync_task() {
    const void* now = backward_task();
    if (now != task) {
      task = now;
      backward_stack.clear();
    }
  }

  std::string current() {
    if (!forward_stack.empty() && forward_stack.back().in_backward) return forward_stack.back().fqn;
    if (in_backward()) {
      sync_task();
      if (!running_nodes.empty()) {
        std::string m = module_of_node(running_nodes.back());
        if (!m.empty()) return m;
      }
      return backward_stack.empty() ? std::string(trace::kGlobalFqn) : backward_stack.back();
    }
    return forward_stack.empty() ? std::string(trace::kGlobalFqn) : forward_stack.back().fqn;
  }

  void backward_enter(const std::string& fqn) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!active || !in_backward()) return;
    sync_task();
    while (!backward_stack.empty() && !is_ancestor_or_self(backward_stack.back(), fqn))
      backward_stack.pop_back();
    for (const std::string& p : path_to(fqn)) {
      if (std::find(backward_stack.begin(), backward_stack.end(), p) == backward_stack.end())
        backward_stack.push_back(p);
    }
  }

  void backward_leave(const std::string& fqn) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!active || !in_backward()) return;
    sync_task();
    auto it = std::find(backward_stack.begin(), backward_stack.end(), fqn);
    if (it != backward_stack.end()) backward_stack.erase(it, backward_stack.end());
  }

  // Called with the mutex held.
  void add_hook(const at::Tensor& t, const std::string& fqn, bool enter) {
    if (!t.defined() || !t.requires_grad()) return;
    std::weak_ptr<State> weak = shared_from_this();
    unsigned pos = t.register_hook([weak, fqn, enter](const at::Tensor&) {
      if (auto state = weak.lock()) enter ? state->backward_enter(fqn) : state->backward_leave(fqn);
    });
    hooks.emplace_back(WeakTensor(t.getIntrusivePtr()), pos);
  }

  void remove_hooks() {
    for (auto& [weak, pos] : hooks) {
      auto strong = weak.lock();
      if (!strong) continue;
      at::Tensor t(std::move(strong));
      t.remove_hook(pos);
    }
    hooks.clear();
  }
};

class ModuleTracker::Observer : public nn::ModuleObserver, public internal::RecordFunctionListener {
 public:
  explicit Observer(std::shared_ptr<State> state)
      : state_(std::move(state)), modules_(this), nodes_(this, /*ops=*/false) {}

  void on_forward_enter(torch::nn::Module& module, const nn::TensorList& inputs) override {
    State& s = *state_;
    std::lock_guard<std::mutex> lock(s.mutex);
    const bool bw = in_backward();
    if (!bw) {  // a new forward: the next backward starts from Global
      s.backward_stack.clear();
      s.task = nullptr;
    }
    const std::string fqn = s.name_of(module);
    const std::string parent = s.forward_stack.empty() ? std::string(trace::kGlobalFqn) : s.forward_stack.back().fqn;
    s.record_module(module, fqn, parent);
    for (const at::Tensor& t : inputs) s.learn_mesh(t);
    State::Frame frame{&module, fqn, bw, -1};
    int64_t enclosing = -1;
    for (auto it = s.forward_stack.rbegin(); it != s.forward_stack.rend(); ++it) {
      if (it->range >= 0) {
        enclosing = it->range;
        break;
      }
    }
    // A recomputation (activation checkpointing) creates nodes in backward;
    // its modules get ranges too, inside an open one for the module whose
    // node runs the recomputation (the checkpointed block), so the backward
    // of the recomputed graph is attributed as the forward's would be.
    if (bw && enclosing < 0 && !s.running_nodes.empty()) {
      const std::string anchor = s.module_of_node(s.running_nodes.back());
      if (!anchor.empty() && anchor != trace::kGlobalFqn) {
        enclosing = static_cast<int64_t>(s.ranges.size());
        s.ranges.push_back(State::Range{at::sequence_number::peek(), kOpen, anchor, -1});
        s.recompute_anchors.emplace_back(s.running_nodes.size(), enclosing);
      }
    }
    frame.range = static_cast<int64_t>(s.ranges.size());
    s.ranges.push_back(State::Range{at::sequence_number::peek(), kOpen, fqn, enclosing});
    s.forward_stack.push_back(std::move(frame));
  }

  void on_forward_exit(torch::nn::Module& module, const nn::TensorList& inputs,
                       const nn::TensorList& outputs) override {
    State& s = *state_;
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = std::find_if(s.forward_stack.rbegin(), s.forward_stack.rend(),
                           [&](const State::Frame& f) { return f.module == &module; });
    if (it == s.forward_stack.rend()) return;  // entered before this session
    State::Frame frame = *it;
    s.forward_stack.erase(std::next(it).base(), s.forward_stack.end());
    if (frame.range >= 0) s.ranges[static_cast<size_t>(frame.range)].end = at::sequence_number::peek();
    if (frame.in_backward) return;
    for (const at::Tensor& t : outputs) s.add_hook(t, frame.fqn, /*enter=*/true);
    for (const at::Tensor& t : inputs) s.add_hook(t, frame.fqn, /*enter=*/false);
  }

  void on_backward_node(int64_t seq, bool start) override {
    State& s = *state_;
    std::lock_guard<std::mutex> lock(s.mutex);
    if (start) {
      s.running_nodes.push_back(seq);
      // A node of known origin also re-anchors the hook stack: hooks that
      // fire after it (outside any node) start from its module.
      if (s.active && in_backward()) {
        s.sync_task();
        std::string m = s.module_of_node(seq);
        if (!m.empty()) s.backward_stack = s.path_to(m);  // Global: empty
      }
    } else if (!s.running_nodes.empty()) {
      // The node that ran a recomputation is done: so are its anchors.
      while (!s.recompute_anchors.empty() && s.recompute_anchors.back().first == s.running_nodes.size()) {
        s.ranges[static_cast<size_t>(s.recompute_anchors.back().second)].end = at::sequence_number::peek();
        s.recompute_anchors.pop_back();
      }
      s.running_nodes.pop_back();
    }
  }

  void on_op(const std::string&, c10::ArrayRef<const c10::IValue>) override {}

 private:
  std::shared_ptr<State> state_;
  nn::ScopedModuleObserver modules_;
  internal::ScopedRecordFunctionListener nodes_;
};

ModuleTracker::Guard::Guard(Guard&& other) noexcept
    : tracker_(other.tracker_), alive_(std::move(other.alive_)) {
  other.tracker_ = nullptr;
}

ModuleTracker::Guard& ModuleTracker::Guard::operator=(Guard&& other) noexcept {
  if (this != &other) {
    release();
    tracker_ = other.tracker_;
    alive_ = std::move(other.alive_);
    other.tracker_ = nullptr;
  }
  return *this;
}

void ModuleTracker::Guard::release() {
  if (tracker_ != nullptr && !alive_.expired()) tracker_->exit();
  tracker_ = nullptr;
}

ModuleTracker::ModuleTracker() : state_(std::make_shared<State>()) {}

ModuleTracker::~ModuleTracker() { exit(); }

ModuleTracker::Guard ModuleTracker::enter() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    TORCH_CHECK(!state_->active, "ModuleTracker::enter: already entered; let the previous guard end first");
    state_->reset();
    state_->active = true;
  }
  observer_ = std::make_unique<Observer>(state_);
  return Guard(this, state_);
}

ModuleTracker::Guard ModuleTracker::enter(torch::nn::Module& root, std::string root_name) {
  Guard guard = enter();
  if (root_name.empty()) root_name = class_name(root);
  std::lock_guard<std::mutex> lock(state_->mutex);
  for (const auto& item : root.named_modules(root_name, /*include_self=*/true)) {
    state_->names[item.value().get()] = State::Name{item.value(), item.key()};
  }
  return guard;
}

void ModuleTracker::exit() {
  observer_.reset();  // stops observing before the state is torn down
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (!state_->active) return;
  state_->active = false;
  state_->remove_hooks();
  state_->forward_stack.clear();
  state_->backward_stack.clear();
  state_->running_nodes.clear();
}

bool ModuleTracker::active() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->active;
}

std::string ModuleTracker::current_module() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->current();
}

bool ModuleTracker::is_bw() const { return in_backward(); }

std::vector<std::string> ModuleTracker::parents() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  std::vector<std::string> path = state_->path_to(state_->current());
  path.insert(path.begin(), trace::kGlobalFqn);
  return path;
}

std::vector<trace::ModuleRecord> ModuleTracker::modules() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->modules;
}

std::map<std::string, std::map<std::string, at::Tensor>> ModuleTracker::parameter_info() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->parameters;
}

std::map<std::string, Placements> ModuleTracker::sharding_info() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->sharding;
}

std::vector<DeviceMesh> ModuleTracker::meshes() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->meshes;
}

std::string ModuleTracker::class_name(const torch::nn::Module& module) {
  std::string name = strip_impl(module.name());
  const size_t colon = name.rfind("::");
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

std::string ModuleTracker::module_type(const torch::nn::Module& module) { return strip_impl(module.name()); }

}  // namespace dtensor::debug
