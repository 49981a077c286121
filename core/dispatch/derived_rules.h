// Rules for out= and in-place overloads, derived from the functional
// overload's rule: "aten::add.out" and "aten::add_.Tensor" shard as
// "aten::add.Tensor" does, with the written tensor's placements fixed.
//   auto rule = derive_rule(op, ShardingRegistry::global());   // nullopt: none applies
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <string>
#include <string_view>

#include "core/dispatch/sharding_registry.h"

namespace dtensor {

// Note [Derived rules: out= and in-place overloads]
// PyTorch 2.15 shards 309 `.out` overloads and dozens of in-place ones with
// the strategy of their functional overload: an out= call keeps the `out`
// tensor's placements and picks the cheapest strategy whose output has them
// (torch.add(a, b, out=c) with c Replicate gathers a and b); an in-place call
// keeps self's. Here the functional overload is found by schema (same name
// without the trailing `_`, or the same arguments without the kwarg-only
// outs), and its rule runs on the call as the functional op sees it: the
// out inputs removed and the first one's placements required of output 0
// (OpCall::out_placements, honoured by expand_per_mesh_dim; with several
// outs, as var_mean.correction_out's out0 and out1, the others' are checked
// after), or self kept (OpCall::self_input, as for hand-registered in-place
// rules). The local op is then the out= or in-place overload itself on the
// local tensors. Not derived: ops whose functional overload has no rule;
// those keep raising "no sharding rule". A
// derived rule refuses, naming the functional op to call instead, a call
// whose functional plan runs a local kernel (written for the functional
// arguments) and an in-place call that changes self's shape (squeeze_).

/// The functional overload an out= or in-place overload derives its rule
/// from ("aten::add.Tensor" for "aten::add.out" and "aten::add_.Tensor"), or
/// nullopt when `op` is neither or no overload matches its arguments.
std::optional<std::string> functional_overload(const c10::OperatorHandle& op);

/// The derived rule of `op` (Note [Derived rules: out= and in-place
/// overloads]), or nullopt when `op` has no functional overload with a rule
/// in `registry`.
std::optional<ShardingRule> derive_rule(const c10::OperatorHandle& op, const ShardingRegistry& registry);

/// The rule the dispatcher uses for `op`: one registered for its exact name;
/// for an out= overload, else the derived one (a base-name rule such as
/// "aten::mv" is written for the functional arguments, not for `out`); else
/// the base name's; else, for an in-place overload, the derived one; else,
/// for a `_foreach_*` op, the per-element one (Note [Foreach rules]).
namespace detail {
/// True for an argument the op writes (`Tensor(a!)`, `Tensor(a!)[]`).
bool writes_argument(const c10::Argument& a);
/// `name` kept for the life of the process, for OpCall::name (a string_view)
/// of the calls derived rules build.
std::string_view interned_op_name(const std::string& name);
}  // namespace detail

std::optional<ShardingRule> find_rule(const c10::OperatorHandle& op, const std::string& full_name,
                                      const ShardingRegistry& registry);

}  // namespace dtensor
