// The boxed DTensor kernel: unwrap -> propagate (cached) -> redistribute
// inputs -> run the op (or the local kernel its plan names) on local tensors
// -> wrap outputs.
#include "core/dispatch/op_dispatcher.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/dispatch/dispatch_mode.h"
#include "core/dispatch/explicit_redistribution.h"
#include "core/dispatch/fast_kernels.h"
#include "core/dispatch/op_log.h"
#include "core/dispatch/op_name.h"
#include "core/dispatch/op_observer.h"
#include "core/dispatch/sharding_propagator.h"
#include "core/dispatch/sharding_registry.h"
#include "core/dtensor_impl.h"
#include "core/log.h"
#include "core/nn/module_boundary.h"
#include "core/redistribute.h"
#include "core/redistribution_origin.h"

namespace dtensor {
namespace {

// Note [Operator names per call]
// Rules, errors and observers want "aten::add.Tensor"; building it costs an
// allocation per call. The name is made once per operator and thread, keyed
// by the address of the OperatorName (it lives in the dispatcher's operator
// table for as long as the operator is registered), and handed out as a
// string_view. Bounded by the number of operators. An entry is checked
// against the name before use (cheap), in case an operator was deregistered
// and another one took its address. What the kernel reads from the schema
// on every call (argument count, the written argument, the returns) is kept
// beside the name: each schema() lookup costs more than the name check.
struct OpInfo {
  std::string name;
  size_t num_args = 0;
  std::vector<size_t> written_args;  // arguments with a write alias (in-place self, out=), in order
  // Per return, the written argument it is (its alias set: max.dim_max
  // returns `max` and `max_values`, _native_batch_norm_legit.out its three
  // outs and not the running statistics it also writes), or -1.
  std::vector<int64_t> return_args;
};

OpInfo make_op_info(const c10::OperatorHandle& op) {
  const c10::FunctionSchema& schema = op.schema();
  OpInfo info{full_op_name(op.operator_name()), schema.arguments().size(), {}, {}};
  for (size_t a = 0; a < schema.arguments().size(); ++a) {
    const auto* alias = schema.arguments()[a].alias_info();
    if (alias != nullptr && alias->isWrite()) info.written_args.push_back(a);
  }
  for (const c10::Argument& ret : schema.returns()) {
    int64_t arg = -1;
    const auto* alias = ret.alias_info();
    if (alias != nullptr && alias->isWrite()) {
      for (size_t a : info.written_args) {
        if (schema.arguments()[a].alias_info()->beforeSets() == alias->beforeSets()) arg = static_cast<int64_t>(a);
      }
    }
    info.return_args.push_back(arg);
  }
  return info;
}

const OpInfo& cached_op_info(const c10::OperatorHandle& op) {
  thread_local std::unordered_map<const c10::OperatorName*, OpInfo> infos;
  // In front of the map, the entry last found for each of 256 addresses
  // (map nodes do not move; an entry is replaced in place).
  thread_local std::array<std::pair<const c10::OperatorName*, const OpInfo*>, 256> recent{};
  const c10::OperatorName& name = op.operator_name();
  // An entry is this operator's unless another took its name's address.
  auto names_it = [&](const OpInfo& info) {
    return info.name.compare(0, name.name.size(), name.name) == 0 && info.name.size() == full_op_name_size(name);
  };
  auto& [recent_name, recent_info] = recent[(reinterpret_cast<uintptr_t>(&name) >> 4) & 255];
  if (recent_name == &name && names_it(*recent_info)) return *recent_info;
  auto it = infos.find(&name);
  if (it == infos.end()) {
    it = infos.emplace(&name, make_op_info(op)).first;
  } else if (!names_it(it->second)) {
    it->second = make_op_info(op);
  }
  recent_name = &name;
  recent_info = &it->second;
  return it->second;
}

// Spec of a plain tensor taken as Replicate on `mesh`.
DTensorSpec replicated_spec(const at::Tensor& t, const DeviceMesh& mesh) {
  return DTensorSpec{mesh, Placements(static_cast<size_t>(mesh.ndim()), Replicate()),
                     TensorMeta{t.sizes().vec(), t.strides().vec(), t.scalar_type()}};
}

// Note [Per-call scratch]
// The kernel's working vectors (the arguments taken off the stack, the
// call's input specs and argument positions, the local tensors, the cache
// key, the local stack) are kept per thread and nesting depth and reused:
// a spec assigned into a kept one reuses its vectors, so a call whose inputs
// look like those of the previous call at that depth allocates nothing for
// them. The kernel re-enters itself (a rule, a redistribution or a local
// kernel may issue DTensor ops), hence one scratch per depth. When a call
// ends, everything that refers to a tensor or a mesh is released, so the
// scratch keeps no tensor, mesh or world alive; the input specs keep only
// their vectors' capacity.
struct CallScratch {
  std::vector<c10::IValue> args;         // the schema arguments, as passed
  OpCall call;
  // Per input, its DTensor's spec object, or null for a plain tensor
  // (Replicate): call.inputs copies them only when needed (Note [Identity
  // fast path] in sharding_propagator.h).
  std::vector<const std::shared_ptr<const DTensorSpec>*> spec_refs;
  bool inputs_copied = false;            // call.inputs holds this call's specs (and call.mesh the mesh)
  const DeviceMesh* mesh = nullptr;      // the call's mesh (a DTensor argument's), copied into call.mesh with the specs
  size_t num_inputs = 0;                 // specs of call.inputs set by this call
  std::vector<at::Tensor> locals;        // local tensor per input, parallel to call.inputs
  std::vector<int64_t> key;              // Note [Sharding cache key]
  std::vector<c10::IValue> local_stack;  // the local op's arguments, then its returns
};

class ScratchLease {
 public:
  ScratchLease() {
    std::vector<std::unique_ptr<CallScratch>>& pool = state().pool;
    size_t& depth = state().depth;
    if (depth == pool.size()) pool.push_back(std::make_unique<CallScratch>());
    scratch_ = pool[depth++].get();
  }
  ~ScratchLease() {
    CallScratch& s = *scratch_;
    s.args.clear();
    s.spec_refs.clear();
    s.locals.clear();
    s.key.clear();
    s.local_stack.clear();
    s.call.positions.clear();
    s.call.outputs.clear();
    s.mesh = nullptr;
    if (s.inputs_copied) {
      s.call.mesh = DeviceMesh();
      for (DTensorSpec& spec : s.call.inputs) spec.mesh = DeviceMesh();
    }
    s.inputs_copied = false;
    s.call.args = nullptr;
    s.call.self_input = -1;
    s.call.out_placements = nullptr;
    s.num_inputs = 0;
    --state().depth;
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  CallScratch& operator*() const { return *scratch_; }

 private:
  struct State {
    std::vector<std::unique_ptr<CallScratch>> pool;
    size_t depth = 0;
  };
  static State& state() {
    thread_local State s;
    return s;
  }
  CallScratch* scratch_;
};

// Sets the next input spec of the call, reusing the kept spec's vectors.
void set_next_input(CallScratch& s, const DTensorSpec& spec) {
  if (s.num_inputs < s.call.inputs.size()) {
    s.call.inputs[s.num_inputs] = spec;
  } else {
    s.call.inputs.push_back(spec);
  }
  ++s.num_inputs;
}

const DeviceMesh* find_mesh(const std::vector<c10::IValue>& args) {
  for (const auto& value : args) {
    if (value.isTensor()) {
      if (auto* impl = dtensor_impl(value.toTensor())) return &impl->spec().mesh;
    } else if (value.isTensorList()) {
      for (const at::Tensor& t : value.toTensorVector()) {
        if (auto* impl = dtensor_impl(t)) return &impl->spec().mesh;
      }
    } else if (value.isList()) {
      for (const c10::IValue& element : value.toListRef()) {
        if (element.isTensor()) {
          if (auto* impl = dtensor_impl(element.toTensor())) return &impl->spec().mesh;
        }
      }
    }
  }
  return nullptr;
}

void add_input(CallScratch& s, const at::Tensor& t, size_t arg, int64_t list_index) {
  if (!t.defined()) return;
  const OpCall& call = s.call;
  const DeviceMesh& call_mesh = *s.mesh;
  if (DTensorImpl* impl = dtensor_impl(t)) {
    const DeviceMesh& mesh = impl->spec().mesh;
    TORCH_CHECK(mesh.same_object(call_mesh) || mesh == call_mesh, call.name, ": DTensor arguments live on different "
                "meshes (", mesh.to_string(), " and ", call_mesh.to_string(), "); redistribute them onto one mesh first");
    // A parallelized module's parameter: Note [Skipped boundaries].
    if (const nn::ModuleBoundary* boundary = impl->boundary()) {
      nn::check_module_boundary(*boundary, call.name, call_mesh.global_rank());
    }
    s.spec_refs.push_back(&impl->shared_spec());
    s.locals.push_back(impl->local());
  } else {
    // As PyTorch's DTensor dispatch: a one-element plain tensor (0-dim or
    // not; e.g. the zeros autograd makes for an unused chunk's gradient) is
    // safely treated as replicated.
    TORCH_CHECK(t.numel() == 1 || ImplicitReplicationGuard::active() ||
                    detail::plain_tensors_replicated_in(call.name),
                call.name,
                ": argument ", arg, " is a plain tensor of shape ", t.sizes(),
                " mixed with DTensors (rank ", call_mesh.global_rank(), "). Make it a DTensor "
                "(distribute_tensor(t, mesh, {Replicate()}) or DTensor::from_local), or wrap "
                "the call in a dtensor::ImplicitReplicationGuard to treat it as replicated");
    s.spec_refs.push_back(nullptr);
    s.locals.push_back(t);
  }
  s.call.positions.push_back(TensorArgPosition{arg, list_index});
}

// Fills call.inputs with this call's input specs (a plain tensor's:
// Replicate), reusing the kept specs' vectors. Once per call.
void copy_input_specs(CallScratch& s) {
  if (s.inputs_copied) return;
  s.call.mesh = *s.mesh;
  for (size_t i = 0; i < s.spec_refs.size(); ++i) {
    if (s.spec_refs[i] != nullptr) {
      set_next_input(s, **s.spec_refs[i]);  // assigned into the kept spec: no allocation
    } else {
      set_next_input(s, replicated_spec(s.locals[i], s.call.mesh));
    }
  }
  s.call.inputs.resize(s.num_inputs);  // fewer inputs than the last call at this depth
  s.inputs_copied = true;
}

}  // namespace

namespace detail {

// Non-tensor arguments that can change a sharding decision, as integers.
// The common kinds are tested first, and lists are read in place: this runs
// for every argument of every DTensor op (Note [Identity fast path]).
void append_arg_key(const c10::IValue& v, std::vector<int64_t>* key) {
  if (v.isTensor()) {
    key->push_back(kKeyTensor);  // tensors are keyed by their specs
  } else if (v.isInt()) {
    key->push_back(1);
    key->push_back(v.toInt());
  } else if (v.isIntList()) {
    key->push_back(kKeyIntList);
    for (const c10::IValue& x : v.toListRef()) key->push_back(x.toInt());
    key->push_back(-kKeyIntList);
  } else if (v.isBool()) {
    key->push_back(2);
    key->push_back(v.toBool() ? 1 : 0);
  } else if (v.isDouble()) {
    key->push_back(4);
    key->push_back(v.toDouble() == 0.0 ? 1 : 0);  // only whether it is 0: Note [Sharding cache key]
  } else if (v.isNone()) {
    key->push_back(6);
  } else if (v.isTensorList()) {
    key->push_back(kKeyTensor);  // keyed by their specs
  } else if (v.isScalar()) {
    at::Scalar s = v.toScalar();
    key->insert(key->end(), {5, static_cast<int64_t>(s.type()), s.equal(0) ? 1 : 0});
  } else if (v.isBoolList()) {  // e.g. native_layer_norm_backward's output mask
    key->push_back(11);
    for (const c10::IValue& b : v.toListRef()) key->push_back(b.toBool() ? 1 : 0);
    key->push_back(-11);
  } else if (v.isString()) {
    key->push_back(7);
    for (char c : v.toStringRef()) key->push_back(c);
  } else if (v.isList()) {
    // Tensor?[] (index's indices): which entries are None decides which
    // dims are indexed; the tensors themselves are keyed by their specs.
    key->push_back(12);
    for (const c10::IValue& e : v.toListRef()) key->push_back(e.isNone() ? 0 : 1);
    key->push_back(-12);
  } else if (v.isDevice()) {
    key->insert(key->end(), {9, static_cast<int64_t>(v.toDevice().type())});
  } else {
    key->push_back(10);
  }
}

// Note [Lazy conjugation of local results]
// A local kernel may return a lazily conjugated or negated view (_conj,
// conj of a complex tensor: a bit on the tensor, not its data). The DTensor
// wrapping it carries no such bit, and collectives move the data as stored,
// so a gathered or redistributed result would lose the conjugation: the
// local result is materialized (resolve_conj / resolve_neg) before it is
// wrapped. PyTorch 2.15's DTensor loses it (row pytorch-wrong-value).
at::Tensor wrap_local_output(const at::Tensor& local, const DeviceMesh& mesh, const PropagationResult& result,
                             size_t output) {
  if (!local.defined()) return local;
  if (local.is_conj() || local.is_neg()) {
    return wrap_local_output(local.resolve_conj().resolve_neg(), mesh, result, output);
  }
  const std::shared_ptr<const DTensorSpec>& shared = result.output_specs[output];
  if (shared->mesh.same_object(mesh)) return make_dtensor(local, shared);  // Note [Shared output specs]
  return make_dtensor(local, DTensorSpec{mesh, result.plan.output_placements[output], result.output_metas[output]});
}

}  // namespace detail

namespace {

using detail::append_arg_key;

at::Tensor wrap_one(const at::Tensor& local, const DeviceMesh& mesh, const PropagationResult& result,
                    size_t* next) {
  return detail::wrap_local_output(local, mesh, result, (*next)++);
}

void unwrap_args(CallScratch& s) {
  const auto& args = s.args;
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& v = args[i];
    append_arg_key(v, &s.key);
    if (v.isTensor()) {
      add_input(s, v.toTensor(), i, -1);
    } else if (v.isList()) {
      // Tensor[], Tensor?[] and the lists of other types alike, read in
      // place (asking for the element type first costs more than a look).
      const auto& list = v.toListRef();
      for (size_t j = 0; j < list.size(); ++j) {
        if (list[j].isTensor()) add_input(s, list[j].toTensor(), i, static_cast<int64_t>(j));
      }
    }
  }
}

// The flattened index of the tensor input written in place (first `a!` arg).
int64_t written_input(const OpCall& call, const OpInfo& info) {
  if (info.written_args.empty()) return -1;
  for (size_t i = 0; i < call.positions.size(); ++i) {
    const size_t arg = call.positions[i].arg_index;
    if (std::find(info.written_args.begin(), info.written_args.end(), arg) != info.written_args.end()) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

// Arguments with the (redistributed) local tensors in place of the DTensors.
// The locals are moved in (the written input's is kept for its DTensor).
void local_args(const OpCall& call, const ShardingPlan& plan, std::vector<at::Tensor>& locals,
                std::vector<c10::IValue>* out) {
  std::vector<c10::IValue>& stack = *out;
  const std::vector<c10::IValue>& args = *call.args;
  const std::vector<TensorArgPosition>& positions = call.positions;
  // A tensor argument's local goes straight in (copying the DTensor first
  // would cost two more reference counts); positions are in argument order.
  stack.clear();
  size_t next = 0;
  for (size_t a = 0; a < args.size(); ++a) {
    while (next < positions.size() && positions[next].arg_index < a) ++next;
    if (next < positions.size() && positions[next].arg_index == a && positions[next].list_index < 0) {
      if (static_cast<int64_t>(next) == call.self_input) {
        stack.emplace_back(locals[next]);
      } else {
        stack.emplace_back(std::move(locals[next]));
      }
    } else {
      stack.push_back(args[a]);
    }
  }
  for (const auto& [index, value] : plan.local_arg_overrides) stack[index] = value;
  for (size_t i = 0; i < positions.size(); ++i) {
    const TensorArgPosition& pos = positions[i];
    c10::IValue& slot = stack[pos.arg_index];
    if (pos.list_index < 0) {
      continue;  // placed above
    } else if (slot.isTensorList()) {
      auto tensors = slot.toTensorVector();
      tensors[static_cast<size_t>(pos.list_index)] = locals[i];
      slot = c10::IValue(tensors);
    } else {
      auto copy = slot.toOptionalTensorList().copy();
      copy.set(static_cast<size_t>(pos.list_index), c10::optional<at::Tensor>(locals[i]));
      slot = c10::IValue(copy);
    }
  }
}

c10::IValue wrap_output(const c10::IValue& value, const DeviceMesh& mesh,
                        const PropagationResult& result, size_t* next) {
  if (value.isTensor()) return wrap_one(value.toTensor(), mesh, result, next);
  if (value.isTensorList()) {
    std::vector<at::Tensor> out;
    for (const at::Tensor& t : value.toTensorVector()) out.push_back(wrap_one(t, mesh, result, next));
    return c10::IValue(out);
  }
  return value;
}

}  // namespace

void detail::dtensor_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const OpInfo& info = cached_op_info(op);  // Note [Operator names per call]
  const std::string& name = info.name;
  if (SkipDispatchGuard::active() && detail::skip_dispatch_for(name)) {
    detail::run_on_local_tensors(op, stack);  // takes the arguments off the stack itself
    return;
  }
  const size_t num_args = info.num_args;
  const ScratchLease lease;  // Note [Per-call scratch]
  CallScratch& s = *lease;
  std::vector<c10::IValue>& args = s.args;
  args.assign(std::make_move_iterator(stack->end() - num_args), std::make_move_iterator(stack->end()));
  stack->erase(stack->end() - num_args, stack->end());
  OpCall& call = s.call;
  call.op = &op;
  call.name = name;
  call.args = &args;
  const DeviceMesh* mesh = find_mesh(args);
  TORCH_CHECK(mesh != nullptr, call.name, ": dispatched to DTensor but no argument is a DTensor");
  s.mesh = mesh;  // copied into call.mesh with the specs (Note [Identity fast path])
  unwrap_args(s);
  std::vector<at::Tensor>& locals = s.locals;
  call.self_input = written_input(call, info);
  // See Note [Logging costs nothing when off] in core/log.h.
  const bool logging = log_enabled(LogLevel::kInfo);
  // Note [Identity fast path]: observers and the log read the input specs.
  const bool by_identity = !logging && !has_op_observers();
  // Held, not referenced, when this call may issue DTensor ops of its own: See
  // Note [Cache eviction]. A decision by identity is used in place otherwise.
  std::shared_ptr<const PropagationResult> shared;
  const PropagationResult* decided = nullptr;
  if (by_identity) {
    if (const std::shared_ptr<const PropagationResult>* found = propagate_by_identity(op, s.key, s.spec_refs)) {
      decided = found->get();
      if (decided->local_kernel) shared = *found;  // a local kernel may issue DTensor ops
    }
  }
  if (decided == nullptr) {
    copy_input_specs(s);
    notify_op_observers(call);
    const uint64_t misses_before = logging ? propagation_cache_stats().misses : 0;
    shared = propagate(call, s.key);
    decided = shared.get();
    if (logging) log_op_decision(call, *shared, propagation_cache_stats().misses == misses_before);
    if (by_identity) remember_by_identity(op, s.key, s.spec_refs, shared);
  }
  const PropagationResult& result = *decided;
  const ShardingPlan& plan = result.plan;
  // s.mesh points into a DTensor argument's spec, which an in-place op (or a
  // local kernel) may replace: then hold the mesh here.
  DeviceMesh held_mesh;
  if (plan.self_placements_change || result.local_kernel) {
    held_mesh = *s.mesh;
    s.mesh = &held_mesh;
  }
  if (!s.inputs_copied) {
    // A decision that redistributes an input, or a local kernel, reads the specs.
    bool needs_specs = result.local_kernel && !plan.local_kernel_reads_no_specs;
    for (size_t i = 0; i < s.spec_refs.size() && !needs_specs; ++i) {
      needs_specs = plan.input_placements[i] != (*s.spec_refs[i])->placements;
    }
    if (needs_specs) copy_input_specs(s);
  }
  for (size_t i = 0; i < call.inputs.size() && s.inputs_copied; ++i) {
    if (plan.input_placements[i] != call.inputs[i].placements) {
      // The local op would write a redistributed copy of the written tensor.
      TORCH_INTERNAL_ASSERT(static_cast<int64_t>(i) != call.self_input || plan.self_placements_change ||
                                plan.self_only_read,
                            call.describe(), ": the rule redistributes the tensor this op writes from ",
                            to_string(call.inputs[i].placements), " to ", to_string(plan.input_placements[i]),
                            " without changing its placements; please report this");
      // Only here, where an input is redistributed: an op whose inputs fit
      // pays nothing for strict mode and origins (Note [Collective origins]).
      if (ExplicitRedistributionGuard* strict = ExplicitRedistributionGuard::current()) {
        strict->check(call, i, plan.input_placements[i]);
      }
      ImplicitOriginScope origin(call.name, static_cast<int64_t>(i), &plan.strategy_choices);
      locals[i] = redistribute_local(locals[i], call.inputs[i], plan.input_placements[i]);
    }
  }
  std::vector<c10::IValue>& local_stack = s.local_stack;
  local_args(call, plan, locals, &local_stack);
  try {
    if (result.local_kernel) {
      result.local_kernel(LocalCall{call, plan, result.output_metas, result.output_specs}, &local_stack);
    } else {
      op.callBoxed(&local_stack);
    }
  } catch (const c10::Error& e) {
    // LibTorch's own message names neither the op nor the DTensor operands
    // (2.x: "expected m1 and m2 to have the same dtype, but got: float != double").
    copy_input_specs(s);  // describe() reads them
    C10_THROW_ERROR(Error, c10::str(call.describe(), ": the local op failed on this rank's shards: ",
                                    e.what_without_backtrace()));
  }
  size_t next_output = 0;
  for (size_t r = 0; r < local_stack.size(); ++r) {
    const int64_t written = r < info.return_args.size() ? info.return_args[r] : -1;
    if (written >= 0 && call.self_input >= 0) {
      // In-place / out=: return the DTensor that was passed in.
      const TensorArgPosition& self = call.positions[static_cast<size_t>(call.self_input)];
      if (plan.self_placements_change && static_cast<int64_t>(self.arg_index) == written) {
        dtensor_impl(args[self.arg_index].toTensor())
            ->set_local_and_spec(locals[static_cast<size_t>(call.self_input)],
                                 DTensorSpec{*s.mesh, plan.output_placements[next_output],
                                             result.output_metas[next_output]});
      }
      ++next_output;
      stack->push_back(args[static_cast<size_t>(written)]);
    } else {
      stack->push_back(wrap_output(local_stack[r], *s.mesh, result, &next_output));
    }
  }
}

namespace {

void fallback_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  (void)stack;
  TORCH_CHECK(false, full_op_name(op.operator_name()), " reached the DTensor dispatcher, which was set up before "
              "this operator was registered; call dtensor::init() again after loading it, or "
              "use dtensor::experimental::local_map / to_local()");
}

}  // namespace

// Note [Composite ops with their own autograd kernel]
// An op with a CompositeImplicitAutograd kernel decomposes before it reaches
// PrivateUse1 (the composite fills that slot of the dispatch table), so the
// DTensor kernel is not registered for it: its parts are dispatched. A few
// ops also have their own autograd kernel (silu_backward: a derivative for
// double backward, and math_silu_backward as the composite); PyTorch's
// Python DTensor sees them whole (its Python key is not a backend slot the
// composite fills) and applies their rule. When we have a rule for such an
// op, the DTensor kernel is registered for it too, so its autograd kernel
// redispatches to the rule as in PyTorch: silu's backward of a Partial input
// reduces it once, not once in sigmoid and again in the composite's add
// (issue #18's differential test).
void register_dtensor_kernel() {
  static std::once_flag once;
  static std::unique_ptr<torch::Library> kernels;
  static std::unique_ptr<torch::Library> fallback;
  std::call_once(once, [] {
    kernels = std::make_unique<torch::Library>(torch::Library::IMPL, "aten",
                                               c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    auto& dispatcher = c10::Dispatcher::singleton();
    for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
      if (name.name.rfind("aten::", 0) != 0) continue;
      auto handle = dispatcher.findOp(name);
      if (!handle || handle->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) continue;
      const std::string full = full_op_name(name);
      if (handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) &&
          !(handle->hasKernelForDispatchKey(c10::DispatchKey::Autograd) && ShardingRegistry::global().find(full))) {
        continue;  // See Note [Composite ops with their own autograd kernel]
      }
      if (std::optional<torch::CppFunction> fast = detail::fast_kernel(full)) {
        kernels->impl(full.c_str(), std::move(*fast));  // Note [Unboxed fast path]
      } else {
        kernels->impl(full.c_str(), torch::CppFunction::makeFromBoxedFunction<&detail::dtensor_kernel>());
      }
    }
    fallback = std::make_unique<torch::Library>(torch::Library::IMPL, "_",
                                                c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    fallback->fallback(torch::CppFunction::makeFromBoxedFunction<&fallback_kernel>());
  });
}

}  // namespace dtensor
