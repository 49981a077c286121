// Prints which aten operators have DTensor sharding rules, by rule family,
// and which operators that reach the DTensor kernel have none (calling one
// of those on a DTensor raises an error naming it and the ways around it).
//   bazel run //tools/op_coverage                  # families and a summary
//   bazel run //tools/op_coverage -- --missing     # also every op without a rule
//   bazel run //tools/op_coverage -- --family nn   # one family
//   bazel run //tools/op_coverage -- --against $PWD/tools/op_coverage/pytorch-2.15-ops.txt
//       # what PyTorch's DTensor shards (a list from tools/op_coverage/pytorch_ops.py)
//       # and this build does not, by kind of overload; and the reverse
//   op_coverage --against LIST --max-missing 46   # exit 1 when more than 46 lack a rule (CI's gate)
//   op_coverage --against LIST --validation $PWD/tests/diff/testdata/validation-2.15.txt
//       # per kind of overload, how its differential programs compare with PyTorch (issue #33)
#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/dispatch/derived_rules.h"
#include "core/dispatch/op_name.h"
#include "core/dispatch/sharding_registry.h"
#include "core/ops/builtin_rules.h"

namespace {

using dtensor::ShardingRegistry;

struct Family {
  const char* name;
  const char* file;
  void (*reg)(ShardingRegistry&);
};

const std::vector<Family>& families() {
  static const std::vector<Family> all = {
      {"pointwise", "core/ops/pointwise_rules.cc", &dtensor::register_pointwise_rules},
      {"reduction", "core/ops/reduction_rules.cc", &dtensor::register_reduction_rules},
      {"matrix", "core/ops/matrix_rules.cc", &dtensor::register_matrix_rules},
      {"vector_product", "core/ops/vector_product_rules.cc", &dtensor::register_vector_product_rules},
      {"view", "core/ops/view_rules.cc", &dtensor::register_view_rules},
      {"concat_split", "core/ops/concat_split_rules.cc", &dtensor::register_concat_split_rules},
      {"tensor", "core/ops/tensor_rules.cc", &dtensor::register_tensor_rules},
      {"math", "core/ops/math_rules.cc", &dtensor::register_math_rules},
      {"nn", "core/ops/nn_rules.cc", &dtensor::register_nn_rules},
      {"loss", "core/ops/loss_rules.cc", &dtensor::register_loss_rules},
      {"spatial", "core/ops/spatial_rules.cc", &dtensor::register_spatial_rules},
      {"norm", "core/ops/norm_rules.cc", &dtensor::register_norm_rules},
      {"scatter", "core/ops/scatter_rules.cc", &dtensor::register_scatter_rules},
      {"index", "core/ops/index_rules.cc", &dtensor::register_index_rules},
      {"optimizer", "core/ops/optimizer_rules.cc", &dtensor::register_optimizer_rules},
      {"linalg", "core/ops/linalg_rules.cc", &dtensor::register_linalg_rules},
      {"attention", "core/ops/attention_rules.cc", &dtensor::register_attention_rules},
      {"fft", "core/ops/fft_rules.cc", &dtensor::register_fft_rules},
  };
  return all;
}

// Every aten operator (full name) and whether it reaches the DTensor kernel
// (no CompositeImplicitAutograd kernel: composites decompose first).
std::map<std::string, bool> aten_ops() {
  std::map<std::string, bool> ops;
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    if (name.name.rfind("aten::", 0) != 0) continue;
    auto handle = dispatcher.findOp(name);
    ops[dtensor::full_op_name(name)] = handle && !handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd);
  }
  return ops;
}

// The aten operators a registry entry covers ("aten::add" = every overload).
std::vector<std::string> covered_by(const std::string& entry, const std::map<std::string, bool>& ops) {
  std::vector<std::string> out;
  if (ops.count(entry)) out.push_back(entry);
  // A base name ("aten::where") matches every overload, as the registry does.
  if (entry.find('.') != std::string::npos) return out;
  for (auto it = ops.lower_bound(entry + "."); it != ops.end() && it->first.rfind(entry + ".", 0) == 0; ++it) {
    out.push_back(it->first);
  }
  return out;
}

// The overload kinds the missing list is grouped by (issue #33 derives the
// first three from the functional rules).
std::string overload_kind(const std::string& full) {
  const size_t dot = full.find('.');
  const std::string base = full.substr(0, dot);
  const std::string overload = dot == std::string::npos ? "" : full.substr(dot + 1);
  if (base.rfind("aten::_foreach_", 0) == 0) return "_foreach_*";
  if (overload == "out" || (overload.size() > 4 && overload.compare(overload.size() - 4, 4, "_out") == 0)) {
    return ".out";
  }
  if (base.back() == '_' && base.rfind("aten::__", 0) != 0) return "in-place";
  return "functional";
}

std::vector<std::string> read_op_list(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "op_coverage: cannot read " << path
              << " (write it with tools/op_coverage/pytorch_ops.py; pass an absolute path under bazel run)\n";
    std::exit(2);
  }
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') names.push_back(line);
  }
  return names;
}

// --against: PyTorch's list against this build's rules. Returns how many of
// PyTorch's overloads reach DTensor here without a rule.
size_t print_against(const std::string& path, const std::map<std::string, bool>& ops,
                     const std::set<std::string>& covered) {
  const std::vector<std::string> theirs = read_op_list(path);
  const std::set<std::string> their_set(theirs.begin(), theirs.end());
  std::map<std::string, std::vector<std::string>> missing_by_kind;
  std::vector<std::string> composite, absent;
  int both = 0;
  for (const std::string& name : theirs) {
    auto it = ops.find(name);
    if (it == ops.end()) {
      absent.push_back(name);
    } else if (!it->second) {
      composite.push_back(name);
    } else if (covered.count(name)) {
      ++both;
    } else {
      missing_by_kind[overload_kind(name)].push_back(name);
    }
  }
  std::vector<std::string> ours_only;
  for (const std::string& name : covered) {
    if (!their_set.count(name)) ours_only.push_back(name);
  }
  size_t missing = 0;
  for (const auto& [kind, names] : missing_by_kind) missing += names.size();
  std::cout << "\n== against " << path << "\n"
            << "  overloads PyTorch shards: " << theirs.size() << "\n"
            << "  ... with a rule here too: " << both << "\n"
            << "  ... composite in this LibTorch (decompose before reaching DTensor): " << composite.size() << "\n"
            << "  ... not in this LibTorch: " << absent.size() << "\n"
            << "  ... reaching DTensor here without a rule: " << missing << "\n";
  for (const auto& [kind, names] : missing_by_kind) std::cout << "        " << kind << ": " << names.size() << "\n";
  std::cout << "  overloads with a rule here that PyTorch does not shard: " << ours_only.size() << "\n";
  for (const auto& [kind, names] : missing_by_kind) {
    std::cout << "\n== PyTorch shards, no rule here (" << kind << ")\n";
    for (const auto& n : names) std::cout << "  " << n << "\n";
  }
  std::cout << "\n== rule here, PyTorch does not shard\n";
  for (const auto& n : ours_only) std::cout << "  " << n << "\n";
  for (const auto& n : absent) std::cout << "  [not in this LibTorch] " << n << "\n";
  return missing;
}

// --validation: tests/diff/testdata/validation-<version>.txt (written by
// tests/diff/regenerate_goldens.sh): "op programs identical row
// pytorch-wrong open" per overload. Prints, per kind of overload, how many
// of PyTorch's overloads that have a rule here the corpus calls, with how
// many programs, and how they compare; then the ones it does not call.
void print_validation(const std::string& path, const std::string& against, const std::set<std::string>& covered) {
  struct Counts {
    int programs = 0, identical = 0, row = 0, pytorch_wrong = 0, open = 0;
  };
  std::map<std::string, Counts> by_op;
  for (const std::string& line : read_op_list(path)) {
    std::istringstream in(line);
    std::string op;
    Counts c;
    in >> op >> c.programs >> c.identical >> c.row >> c.pytorch_wrong >> c.open;
    by_op[op] = c;
  }
  struct Kind {
    int overloads = 0, validated = 0, three_samples = 0, agree = 0, with_row = 0, pytorch_wrong = 0, open = 0;
  };
  std::map<std::string, Kind> kinds;
  std::vector<std::string> unvalidated;
  for (const std::string& name : read_op_list(against)) {
    if (!covered.count(name)) continue;
    Kind& k = kinds[overload_kind(name)];
    ++k.overloads;
    auto it = by_op.find(name);
    if (it == by_op.end()) {
      unvalidated.push_back(name);
      continue;
    }
    const Counts& c = it->second;
    ++k.validated;
    k.three_samples += c.programs >= 6 ? 1 : 0;  // three samples, each on two meshes
    k.open += c.open > 0 ? 1 : 0;
    k.pytorch_wrong += c.open == 0 && c.pytorch_wrong > 0 ? 1 : 0;
    k.with_row += c.open == 0 && c.pytorch_wrong == 0 && c.row > 0 ? 1 : 0;
    k.agree += c.programs == c.identical ? 1 : 0;
  }
  std::cout << "\n== validation against PyTorch (" << path << ")\n"
            << "  per kind: overloads PyTorch shards with a rule here / called by the corpus / by 6+ programs\n"
            << "  (three samples on two meshes);\n"
            << "  of those called: all identical / a tested deviation row / PyTorch wrong or refusing / open\n";
  for (const auto& [kind, k] : kinds) {
    std::cout << "  " << kind << ": " << k.overloads << " / " << k.validated << " / " << k.three_samples << ";  " << k.agree
              << " / " << k.with_row << " / " << k.pytorch_wrong << " / " << k.open << "\n";
  }
  std::cout << "\n== PyTorch shards, rule here, no program calls it (" << unvalidated.size() << ")\n";
  for (const auto& n : unvalidated) std::cout << "  " << n << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  bool list_missing = false;
  std::string only_family, against, validation;
  long max_missing = -1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--missing") == 0) {
      list_missing = true;
    } else if (std::strcmp(argv[i], "--family") == 0 && i + 1 < argc) {
      only_family = argv[++i];
    } else if (std::strcmp(argv[i], "--against") == 0 && i + 1 < argc) {
      against = argv[++i];
    } else if (std::strcmp(argv[i], "--validation") == 0 && i + 1 < argc) {
      validation = argv[++i];
    } else if (std::strcmp(argv[i], "--max-missing") == 0 && i + 1 < argc) {
      max_missing = std::strtol(argv[++i], nullptr, 10);
    } else {
      std::cerr << "usage: op_coverage [--missing] [--family NAME] [--against PYTORCH_OPS.txt [--max-missing N] "
                   "[--validation VALIDATION.txt]]\n";
      return 2;
    }
  }
  const std::map<std::string, bool> ops = aten_ops();
  std::set<std::string> covered;  // full names of ops reaching DTensor with a rule
  int entries = 0;
  for (const Family& f : families()) {
    ShardingRegistry registry;
    f.reg(registry);
    const std::vector<std::string> names = registry.names();
    std::vector<std::string> reaching, composite, unknown;
    for (const std::string& entry : names) {
      bool any = false, reaches = false;
      for (const std::string& op : covered_by(entry, ops)) {
        any = true;
        if (ops.at(op)) {
          reaches = true;
          covered.insert(op);
        }
      }
      (!any ? unknown : reaches ? reaching : composite).push_back(entry);
    }
    entries += static_cast<int>(names.size());
    if (!only_family.empty() && only_family != f.name) continue;
    std::cout << "== " << f.name << " (" << f.file << "): " << names.size() << " rule entries\n";
    for (const auto& n : reaching) std::cout << "  " << n << "\n";
    for (const auto& n : composite) std::cout << "  " << n << "   [composite in this LibTorch: never reaches DTensor]\n";
    for (const auto& n : unknown) std::cout << "  " << n << "   [no such operator in this LibTorch]\n";
  }
  // Out=, in-place and _foreach_ overloads whose functional (per-element)
  // overload has a rule (Note [Derived rules: out= and in-place overloads],
  // Note [Foreach rules]).
  ShardingRegistry all;
  for (const Family& f : families()) f.reg(all);
  std::set<std::string> derived;
  std::vector<std::string> missing;
  int reaching_total = 0;
  for (const auto& [name, reaches] : ops) {
    if (!reaches) continue;
    ++reaching_total;
    if (covered.count(name)) continue;
    auto handle = c10::Dispatcher::singleton().findOp(dtensor::parse_op_name(name));
    if (handle && dtensor::find_rule(*handle, name, all)) {
      derived.insert(name);
    } else {
      missing.push_back(name);
    }
  }
  std::cout << "\n== summary\n"
            << "  rule entries: " << entries << " in " << families().size() << " families\n"
            << "  aten operators reaching the DTensor kernel: " << reaching_total << "\n"
            << "  ... with a rule: " << covered.size() << "\n"
            << "  ... with a rule derived from the functional overload's (out=, in-place, _foreach_): "
            << derived.size()
            << "\n"
            << "  ... without (a DTensor call raises an error naming the op, with\n"
            << "      register_sharding / local_map / implicit_replication as ways out): " << missing.size() << "\n"
            << "  autograd kernels replaced for DTensors: see core/ops/autograd_overrides.cc\n";
  if (list_missing) {
    std::cout << "\n== derived from the functional overload's rule\n";
    for (const auto& n : derived) std::cout << "  " << n << "\n";
    std::cout << "\n== without a rule\n";
    for (const auto& n : missing) std::cout << "  " << n << "\n";
  }
  if (!against.empty()) {
    std::set<std::string> any_rule = covered;
    any_rule.insert(derived.begin(), derived.end());
    const size_t missing = print_against(against, ops, any_rule);
    if (!validation.empty()) print_validation(validation, against, any_rule);
    if (max_missing >= 0 && missing > static_cast<size_t>(max_missing)) {
      std::cerr << "op_coverage: " << missing << " of the overloads in " << against
                << " reach DTensor without a rule, more than --max-missing " << max_missing
                << ": a rule was lost (see the lists above)\n";
      return 1;
    }
  }
  return 0;
}
