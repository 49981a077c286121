// ExplicitRedistributionGuard: see explicit_redistribution.h.
#include "core/dispatch/explicit_redistribution.h"

#include <c10/util/Exception.h>

#include <sstream>

#include "layout/collective_kind.h"
#include "layout/transitions.h"
#include "core/nn/module_call.h"
#include "core/redistribute.h"

namespace dtensor {
namespace {

ExplicitRedistributionGuard*& thread_guard() {
  thread_local ExplicitRedistributionGuard* guard = nullptr;
  return guard;
}

// "MLPModuleImpl" -> "MLPModule", as CommDebugMode names roots.
std::string class_name(const torch::nn::Module& m) {
  std::string name = m.name();
  const std::string impl = "Impl";
  if (name.size() > impl.size() && name.compare(name.size() - impl.size(), impl.size(), impl) == 0) {
    name.resize(name.size() - impl.size());
  }
  const size_t colon = name.rfind("::");
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

}  // namespace

// The modules being run on this thread (dtensor::nn::call / ModuleScope).
class ExplicitRedistributionGuard::ModuleStack : public nn::ModuleObserver {
 public:
  ModuleStack() : registration_(this) {}
  void on_forward_enter(torch::nn::Module& module, const nn::TensorList&) override { stack.push_back(&module); }
  void on_forward_exit(torch::nn::Module& module, const nn::TensorList&, const nn::TensorList&) override {
    if (!stack.empty() && stack.back() == &module) stack.pop_back();
  }
  std::vector<const torch::nn::Module*> stack;

 private:
  nn::ScopedModuleObserver registration_;
};

ExplicitRedistributionGuard::ExplicitRedistributionGuard(RedistributionPolicy policy)
    : ExplicitRedistributionGuard(ExplicitRedistributionOptions{policy, false}) {}

ExplicitRedistributionGuard::ExplicitRedistributionGuard(ExplicitRedistributionOptions options)
    : options_(options), previous_(thread_guard()), modules_(std::make_unique<ModuleStack>()) {
  thread_guard() = this;
}

ExplicitRedistributionGuard::ExplicitRedistributionGuard(torch::nn::Module& root, std::string root_name,
                                                         ExplicitRedistributionOptions options)
    : ExplicitRedistributionGuard(options) {
  init_root(root, std::move(root_name));
}

ExplicitRedistributionGuard::~ExplicitRedistributionGuard() { thread_guard() = previous_; }

ExplicitRedistributionGuard* ExplicitRedistributionGuard::current() { return thread_guard(); }

void ExplicitRedistributionGuard::init_root(torch::nn::Module& root, std::string root_name) {
  if (root_name.empty()) root_name = class_name(root);
  fqns_[&root] = root_name;
  for (const auto& item : root.named_modules("", /*include_self=*/false)) {
    fqns_[item.value().get()] = root_name + "." + item.key();
  }
}

std::string ExplicitRedistributionGuard::current_module() const {
  if (modules_->stack.empty()) return "";
  const torch::nn::Module* m = modules_->stack.back();
  auto it = fqns_.find(m);
  return it != fqns_.end() ? it->second : class_name(*m);
}

void ExplicitRedistributionGuard::check(const OpCall& call, size_t input, const Placements& to) {
  ++implicit_count_;
  if (options_.policy == RedistributionPolicy::kAllow) return;
  const DTensorSpec& from = call.inputs[input];
  const std::shared_ptr<const RedistributePlan> plan = redistribute_plan(from, to);
  if (!options_.strict && plan->num_collectives() == 0) return;  // as PyTorch: only communication
  std::ostringstream collectives;
  for (const RedistributeStep& step : plan->steps) {
    const std::optional<CollectiveKind> kind = step_collective(step.kind);
    if (!kind) continue;
    collectives << (collectives.tellp() > 0 ? ", " : "") << collective_name(*kind) << " on mesh dim "
                << step.mesh_dim << " (" << step.from.to_string() << " -> " << step.to.to_string() << ")";
  }
  const std::string module = current_module();
  const std::string where = module.empty() ? "outside any tracked module" : "in module " + module;
  const std::string site = std::string(call.name) + "|" + module + "|" + std::to_string(input) + "|" +
                           to_string(from.placements) + "|" + to_string(to);
  std::ostringstream msg;
  msg << "implicit redistribution of " << call.name << " input " << input << " " << where << ": "
      << c10::toString(from.meta.dtype) << c10::IntArrayRef(from.meta.shape) << " "
      << to_string(from.placements) << " -> " << to_string(to) << " on " << from.mesh.to_string()
      << " would issue " << (collectives.tellp() > 0 ? collectives.str() : std::string("no collective (local)"))
      << " (rank " << from.mesh.global_rank() << ", call " << call.describe()
      << "). An ExplicitRedistributionGuard is active: make it explicit with "
      << "input.redistribute(" << to_string(to) << ") before the op (or give the module's parallel style / "
      << "PrepareModuleInput the layout the op needs), or let it run with RedistributionPolicy::kWarn / kAllow";
  if (options_.policy == RedistributionPolicy::kRaise) TORCH_CHECK(false, msg.str());
  if (warned_sites_.insert(site).second) {
    warnings_.push_back(msg.str());
    if (options_.policy == RedistributionPolicy::kWarn) TORCH_WARN(msg.str());
  }
}

}  // namespace dtensor
