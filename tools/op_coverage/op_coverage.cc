// Prints which aten operators have DTensor sharding rules, by rule family,
// and which operators that reach the DTensor kernel have none (calling one
// of those on a DTensor raises an error naming it and the ways around it).
//   bazel run //tools/op_coverage                  # families and a summary
//   bazel run //tools/op_coverage -- --missing     # also every op without a rule
//   bazel run //tools/op_coverage -- --family nn   # one family
#include <ATen/core/dispatch/Dispatcher.h>

#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

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
  if (ops.count(entry)) return {entry};
  std::vector<std::string> out;
  for (auto it = ops.lower_bound(entry + "."); it != ops.end() && it->first.rfind(entry + ".", 0) == 0; ++it) {
    out.push_back(it->first);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  bool list_missing = false;
  std::string only_family;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--missing") == 0) {
      list_missing = true;
    } else if (std::strcmp(argv[i], "--family") == 0 && i + 1 < argc) {
      only_family = argv[++i];
    } else {
      std::cerr << "usage: op_coverage [--missing] [--family NAME]\n";
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
  std::vector<std::string> missing;
  int reaching_total = 0;
  for (const auto& [name, reaches] : ops) {
    if (!reaches) continue;
    ++reaching_total;
    if (!covered.count(name)) missing.push_back(name);
  }
  std::cout << "\n== summary\n"
            << "  rule entries: " << entries << " in " << families().size() << " families\n"
            << "  aten operators reaching the DTensor kernel: " << reaching_total << "\n"
            << "  ... with a rule: " << covered.size() << "\n"
            << "  ... without (a DTensor call raises an error naming the op, with\n"
            << "      register_sharding / local_map / implicit_replication as ways out): " << missing.size() << "\n"
            << "  autograd kernels replaced for DTensors: see core/ops/autograd_overrides.cc\n";
  if (list_missing) {
    std::cout << "\n== without a rule\n";
    for (const auto& n : missing) std::cout << "  " << n << "\n";
  }
  return 0;
}
