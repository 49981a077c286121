// Output metadata through the meta device, rule lookup, and the bounded
// per-thread cache in front of both.
#include "core/dispatch/sharding_propagator.h"

#include <ATen/Functions.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "backends/rank_memory.h"
#include "core/dispatch/dispatch_mode.h"
#include "core/dispatch/derived_rules.h"
#include "core/dispatch/op_name.h"
#include "core/dispatch/sharding_registry.h"
#include "core/dispatch/strided_inputs.h"

namespace dtensor {
namespace {

// Note [Sharding cache key]
// A decision depends on the operator, the input specs and the non-tensor
// arguments that shape it (dims, sizes, flags, dtypes). Floating-point scalar
// VALUES are left out on purpose (only their kind and whether they are 0 are
// kept): optimizers pass a new learning-rate or bias-correction scalar every
// step, and keying on them would grow the cache without bound. No built-in
// rule reads a float value beyond its zeroness (constant_pad_nd's value: a
// padded P(sum) stays Partial only when the pad is 0).
// The thread's rule modes (Note [Rule modes] in core/dispatch/dispatch_mode.h,
// e.g. loss_parallel) are part of the key: rules decide differently inside.
//
// Note [Sharding cache lookup]
// A hit must not allocate: the lookup hashes the call in place (operator
// schema address, argument key, input specs) and compares the candidates of
// that hash field by field against the call; the key is copied only on a miss.
struct CacheKey {
  const void* op = nullptr;
  std::vector<int64_t> args;
  std::vector<DTensorSpec> inputs;
  uint64_t registry_generation = 0;
  uint32_t rule_modes = 0;
};

struct CacheEntry {
  CacheKey key;
  std::shared_ptr<const PropagationResult> result;  // shared: See Note [Cache eviction]
};

bool matches(const CacheKey& key, const void* op, const std::vector<int64_t>& args,
             const std::vector<DTensorSpec>& inputs, uint64_t generation, uint32_t modes) {
  return key.op == op && key.registry_generation == generation && key.rule_modes == modes &&
         key.args == args && key.inputs == inputs;
}

// Note [Cache eviction]
// Bounded: cleared when full, so a program with ever-changing shapes costs
// recomputation, never unbounded memory. Clearing can happen in the middle of
// a DTensor op: a rule or a local kernel that issues a DTensor op of its own
// may fill the cache. Results are therefore handed out as shared pointers to
// immutable results, never as references into the map, so a result in use
// outlives its eviction. A hit costs one reference-count increment.
constexpr size_t kDefaultCacheEntries = 8192;

// One slot of Note [Identity fast path]'s table.
struct IdentitySlot {
  const void* op = nullptr;
  std::vector<std::shared_ptr<const DTensorSpec>> inputs;  // held: their addresses stay theirs
  std::vector<int64_t> args;
  uint64_t registry_generation = 0;
  uint32_t rule_modes = 0;
  std::shared_ptr<const PropagationResult> result;
};
constexpr size_t kIdentitySlots = 256;  // a power of two

struct ThreadCache {
  // hash -> entries with that hash (almost always one).
  std::unordered_multimap<size_t, CacheEntry> entries;
  PropagationCacheStats stats;
  size_t capacity = kDefaultCacheEntries;
  std::array<IdentitySlot, kIdentitySlots> by_identity;
};

IdentitySlot& identity_slot(ThreadCache& cache, const void* op) {
  return cache.by_identity[(reinterpret_cast<uintptr_t>(op) >> 4) & (kIdentitySlots - 1)];
}

ThreadCache& thread_cache() {
  thread_local ThreadCache cache;
  return cache;
}

// Note [Output shapes without a meta kernel]
// Output metadata comes from running the operator on the meta device with
// the global shapes. LibTorch 1.13 lacks meta kernels for some operators
// (relu, for one), and later ones for some too (cholesky_inverse); for those
// the operator runs once on zero-filled CPU tensors of the global shapes
// instead, and where zeros are refused (a singular matrix), once more on
// floating tensors holding identity matrices in their last two dims (ones
// for fewer dims). That costs a global-sized computation or two per cache
// miss, never per call.
enum class StandIn { kMeta, kZeros, kIdentity };

at::Tensor shape_tensor(const TensorMeta& meta, StandIn kind) {
  auto options = at::TensorOptions().dtype(meta.dtype).device(kind == StandIn::kMeta ? c10::kMeta : c10::kCPU);
  if (kind == StandIn::kMeta) return at::empty_strided(meta.shape, meta.stride, options);
  at::Tensor t = at::zeros(meta.shape, options);
  if (kind == StandIn::kIdentity && at::isFloatingType(meta.dtype)) {
    if (meta.shape.size() >= 2) {
      const int64_t n = meta.shape.size();
      t.copy_(at::eye(meta.shape[n - 2], meta.shape[n - 1], options).expand_as(t));
    } else {
      t.fill_(1);
    }
  }
  return t.as_strided(meta.shape, meta.stride);
}

void collect_tensor_metas(const c10::IValue& value, std::vector<TensorMeta>* out) {
  auto add = [&](const at::Tensor& t) {
    if (!t.defined()) {
      out->push_back(TensorMeta{});
      return;
    }
    out->push_back(TensorMeta{t.sizes().vec(), t.strides().vec(), t.scalar_type()});
  };
  if (value.isTensor()) {
    add(value.toTensor());
  } else if (value.isTensorList()) {
    for (const at::Tensor& t : value.toTensorVector()) add(t);
  } else if (value.isTuple()) {
    for (const auto& element : value.toTupleRef().elements()) collect_tensor_metas(element, out);
  }
}

// Note [Shape runs are unobserved]
// The operator calls of shape inference (the stand-ins of the global shapes
// and the op on them) are an implementation detail of a cache miss, not work
// of the program. RecordFunction is off while they run, so no RecordFunction
// callback sees them (CommDebugMode's local ops and memory location, the
// module tracker, LibTorch's profiler), and their allocations are charged to
// no rank (backends/rank_memory.h counts meta allocations too: global-sized
// stand-ins would put a first-step peak far above the steady state). A step
// traced on a cold propagation cache therefore records the same ops and the
// same memory as on a warm one, and the planner needs no untraced warm-up
// step (Note [Planner step] in planner/step_trace.cc).

// Runs the operator on stand-ins (meta or CPU) of the inputs' global shapes.
std::vector<TensorMeta> output_metas_on(const OpCall& call, StandIn device) {
  at::RecordFunctionGuard unobserved(/*is_enabled=*/false);  // Note [Shape runs are unobserved]
  ScopedRankMemory unaccounted(/*account=*/nullptr);
  std::vector<c10::IValue> stack = *call.args;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const TensorArgPosition& pos = call.positions[i];
    at::Tensor meta = shape_tensor(call.inputs[i].meta, device);
    if (pos.list_index < 0) {
      stack[pos.arg_index] = meta;
    } else {
      c10::IValue& list = stack[pos.arg_index];
      if (list.isTensorList()) {
        auto tensors = list.toTensorVector();
        tensors[static_cast<size_t>(pos.list_index)] = meta;
        list = c10::IValue(tensors);
      } else {
        auto optionals = list.toOptionalTensorList();
        c10::List<c10::optional<at::Tensor>> copy = optionals.copy();
        copy.set(static_cast<size_t>(pos.list_index), c10::optional<at::Tensor>(meta));
        list = c10::IValue(copy);
      }
    }
  }
  call.op->callBoxed(&stack);
  std::vector<TensorMeta> metas;
  for (const auto& value : stack) collect_tensor_metas(value, &metas);
  return metas;
}

// Note [Shapes of out= forms that also write state]
// _native_batch_norm_legit.out writes its outs and, positionally, the
// running statistics. LibTorch 2.11's C++ Meta path for it returns
// references to tensors that no longer exist (the process dies reading
// them); its outputs are its functional form's, so their shapes come from
// running that form (the arguments before the kwarg-only outs) instead.
// Only out= forms with a written positional argument take this path.
std::optional<c10::OperatorHandle> functional_for_shapes(const c10::OperatorHandle& op) {
  const auto& args = op.schema().arguments();
  bool positional_write = false, kwarg_write = false;
  for (const c10::Argument& a : args) {
    const bool writes = a.alias_info() != nullptr && a.alias_info()->isWrite();
    positional_write = positional_write || (writes && !a.kwarg_only());
    kwarg_write = kwarg_write || (writes && a.kwarg_only());
  }
  if (!positional_write || !kwarg_write) return std::nullopt;
  const std::optional<std::string> functional = functional_overload(op);
  if (!functional) return std::nullopt;
  auto handle = c10::Dispatcher::singleton().findOp(parse_op_name(*functional));  // c10::optional before 2.x
  if (!handle) return std::nullopt;
  return *handle;
}

std::vector<TensorMeta> output_metas(const OpCall& call, StandIn device) {
  const std::optional<c10::OperatorHandle> functional = functional_for_shapes(*call.op);
  if (!functional) return output_metas_on(call, device);
  const size_t n = functional->schema().arguments().size();  // the outs are the trailing kwarg-only arguments
  const std::vector<c10::IValue> args(call.args->begin(), call.args->begin() + static_cast<std::ptrdiff_t>(n));
  OpCall f = call;
  f.op = &*functional;
  f.args = &args;
  f.inputs.clear();
  f.positions.clear();
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (call.positions[i].arg_index >= n) continue;
    f.inputs.push_back(call.inputs[i]);
    f.positions.push_back(call.positions[i]);
  }
  return output_metas_on(f, device);
}

// An out= call's local kernel would resize a local out of the wrong size
// and leave its DTensor's global shape behind (silently wrong data): refuse.
void check_out_shape(const OpCall& call) {
  if (call.self_input < 0 || call.outputs.empty()) return;
  const TensorArgPosition& pos = call.positions[static_cast<size_t>(call.self_input)];
  if (pos.list_index >= 0 || !call.op->schema().arguments()[pos.arg_index].kwarg_only()) return;  // in-place self
  const TensorMeta& out = call.inputs[static_cast<size_t>(call.self_input)].meta;
  TORCH_CHECK(out.shape == call.outputs[0].shape, call.describe(), ": out has shape ",
              c10::IntArrayRef(out.shape), " but the result has shape ", c10::IntArrayRef(call.outputs[0].shape),
              "; a DTensor out is not resized: pass one of the result's shape");
}

size_t hash_key(const void* op, const std::vector<int64_t>& args,
                const std::vector<DTensorSpec>& inputs, uint64_t generation, uint32_t modes) {
  size_t h = reinterpret_cast<size_t>(op) ^ static_cast<size_t>(generation) * 0x9e3779b97f4a7c15u;
  h = h * 1000003u ^ modes;
  for (int64_t a : args) h = h * 1000003u ^ static_cast<size_t>(a);
  for (const auto& spec : inputs) h = h * 31 + spec.hash();
  return h;
}

}  // namespace

std::shared_ptr<const PropagationResult> propagate(OpCall& call, const std::vector<int64_t>& arg_key) {
  ThreadCache& cache = thread_cache();
  const void* op = &call.op->schema();
  const uint64_t generation = ShardingRegistry::global().generation();
  const uint32_t modes = RuleModeGuard::bits();
  const size_t hash = hash_key(op, arg_key, call.inputs, generation, modes);
  auto [first, last] = cache.entries.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    if (matches(it->second.key, op, arg_key, call.inputs, generation, modes)) {
      ++cache.stats.hits;  // call.outputs stays empty: see the header
      return it->second.result;
    }
  }
  ++cache.stats.misses;
  auto rule = find_rule(*call.op, std::string(call.name), ShardingRegistry::global());
  TORCH_CHECK(rule.has_value(), call.describe(), ": this operator has no DTensor sharding rule. "
              "Register one with dtensor::experimental::register_sharding(\"", call.name,
              "\", fn), run your code on local shards with dtensor::experimental::local_map, "
              "or redistribute to Replicate and use to_local()");
  auto result = std::make_shared<PropagationResult>();
  try {
    result->output_metas = output_metas(call, StandIn::kMeta);
  } catch (const c10::Error&) {
    try {
      result->output_metas = output_metas(call, StandIn::kZeros);
    } catch (const c10::Error&) {
      try {
        result->output_metas = output_metas(call, StandIn::kIdentity);
      } catch (const c10::Error& e) {
        TORCH_CHECK(false, call.describe(), ": could not infer the global output shapes: ",
                    e.what_without_backtrace());
      }
    }
  }
  call.outputs = result->output_metas;
  check_out_shape(call);
  result->plan = plan_with_strided_inputs(*rule, call);  // Note [Operators on strided shards]
  const ShardingPlan& plan = result->plan;
  TORCH_INTERNAL_ASSERT(plan.input_placements.size() == call.inputs.size(), call.name,
                        ": rule returned ", plan.input_placements.size(),
                        " input placements for ", call.inputs.size(), " inputs");
  TORCH_INTERNAL_ASSERT(plan.output_placements.size() == call.outputs.size(), call.name,
                        ": rule returned ", plan.output_placements.size(),
                        " output placements for ", call.outputs.size(), " outputs");
  if (!plan.local_kernel.empty()) {
    auto kernel = ShardingRegistry::global().find_local_kernel(plan.local_kernel);
    TORCH_INTERNAL_ASSERT(kernel.has_value(), call.name, ": the rule names local kernel \"",
                          plan.local_kernel, "\", which is not registered");
    result->local_kernel = std::move(*kernel);
  }
  result->output_specs.reserve(result->output_metas.size());
  for (size_t o = 0; o < result->output_metas.size(); ++o) {  // Note [Shared output specs]
    result->output_specs.push_back(std::make_shared<const DTensorSpec>(
        DTensorSpec{call.mesh, plan.output_placements[o], result->output_metas[o]}));
  }
  // The rule may have issued DTensor ops that filled the cache in the meantime.
  if (cache.entries.size() >= cache.capacity) cache.entries.clear();
  std::shared_ptr<const PropagationResult> shared = std::move(result);
  cache.entries.emplace(hash, CacheEntry{CacheKey{op, arg_key, call.inputs, generation, modes}, shared});
  return shared;
}

const std::shared_ptr<const PropagationResult>* propagate_by_identity(
    const c10::OperatorHandle& op, const std::vector<int64_t>& arg_key,
    const std::vector<const std::shared_ptr<const DTensorSpec>*>& inputs, bool count_hit) {
  ThreadCache& cache = thread_cache();
  const void* key = &op.schema();
  const IdentitySlot& slot = identity_slot(cache, key);
  if (slot.op != key || slot.inputs.size() != inputs.size() || slot.args != arg_key ||
      slot.registry_generation != ShardingRegistry::global().generation() || slot.rule_modes != RuleModeGuard::bits()) {
    return nullptr;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr || slot.inputs[i].get() != inputs[i]->get()) return nullptr;
  }
  if (count_hit) ++cache.stats.hits;
  return &slot.result;
}

void count_unboxed_hit() {
  PropagationCacheStats& stats = thread_cache().stats;
  ++stats.hits;
  ++stats.unboxed;
}

void remember_by_identity(const c10::OperatorHandle& op, const std::vector<int64_t>& arg_key,
                          const std::vector<const std::shared_ptr<const DTensorSpec>*>& inputs,
                          std::shared_ptr<const PropagationResult> result) {
  IdentitySlot& slot = identity_slot(thread_cache(), &op.schema());
  slot.op = nullptr;  // unusable until complete
  slot.inputs.clear();
  for (const std::shared_ptr<const DTensorSpec>* spec : inputs) {
    if (spec == nullptr) return;  // a plain tensor input: its spec is made per call
    slot.inputs.push_back(*spec);
  }
  slot.args = arg_key;
  slot.registry_generation = ShardingRegistry::global().generation();
  slot.rule_modes = RuleModeGuard::bits();
  slot.result = std::move(result);
  slot.op = &op.schema();
}

PropagationCacheStats propagation_cache_stats() {
  PropagationCacheStats stats = thread_cache().stats;
  stats.size = thread_cache().entries.size();
  return stats;
}

void clear_propagation_cache() {
  ThreadCache& cache = thread_cache();
  cache.entries.clear();
  for (IdentitySlot& slot : cache.by_identity) slot = IdentitySlot{};
}

void set_propagation_cache_capacity(size_t entries) {
  TORCH_CHECK(entries >= 1, "set_propagation_cache_capacity: the cache must hold at least one entry");
  thread_cache().capacity = entries;
}

}  // namespace dtensor
