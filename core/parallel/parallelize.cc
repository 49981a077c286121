// parallelize_module: plan paths with wildcards resolved against the module
// tree, then each style applied to each match.
#include "core/parallel/parallelize.h"

#include <c10/util/Exception.h>

#include <sstream>

#include "core/parallel/internal/layouts.h"

namespace dtensor {
namespace {

using Match = std::pair<std::string, std::shared_ptr<torch::nn::Module>>;

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  if (path.empty()) return parts;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

// Matches `c` against the set starting after '[' at pattern[i]; sets `end`
// to the index after ']'. Returns false (and end = npos) for an unterminated set.
bool match_set(char c, const std::string& pattern, size_t i, size_t& end) {
  bool negate = i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^');
  if (negate) ++i;
  bool matched = false;
  bool first = true;
  for (; i < pattern.size() && (first || pattern[i] != ']'); ++i, first = false) {
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      matched |= pattern[i] <= c && c <= pattern[i + 2];
      i += 2;
    } else {
      matched |= pattern[i] == c;
    }
  }
  if (i >= pattern.size()) {
    end = std::string::npos;
    return false;
  }
  end = i + 1;
  return matched != negate;
}

bool fnmatch_from(const std::string& name, size_t n, const std::string& pattern, size_t p) {
  while (p < pattern.size()) {
    const char c = pattern[p];
    if (c == '*') {
      while (p < pattern.size() && pattern[p] == '*') ++p;
      if (p == pattern.size()) return true;
      for (size_t k = n; k <= name.size(); ++k) {
        if (fnmatch_from(name, k, pattern, p)) return true;
      }
      return false;
    }
    if (n == name.size()) return false;
    if (c == '?') {
      ++p;
    } else if (c == '[') {
      size_t end = 0;
      bool ok = match_set(name[n], pattern, p + 1, end);
      if (end == std::string::npos) {  // no closing ']': a literal '[' (as Python's fnmatch)
        if (name[n] != '[') return false;
        ++p;
      } else {
        if (!ok) return false;
        p = end;
      }
    } else {
      if (name[n] != c) return false;
      ++p;
    }
    ++n;
  }
  return n == name.size();
}

std::string child_names(const torch::nn::Module& module) {
  std::ostringstream out;
  out << "[";
  bool first = true;
  for (const auto& child : module.named_children()) {
    out << (first ? "" : ", ") << child.key();
    first = false;
  }
  out << "]";
  return out.str();
}

// The submodules `pattern` matches; throws naming the first part that
// matched nothing.
std::vector<Match> resolve(torch::nn::Module& root, const std::string& pattern) {
  std::vector<Match> current{{"", root.shared_from_this()}};
  for (const std::string& part : split_path(pattern)) {
    TORCH_CHECK(!part.empty(), "parallelize_module: plan path '", pattern, "' has an empty part");
    std::vector<Match> next;
    for (const auto& [path, module] : current) {
      for (const auto& child : module->named_children()) {
        if (fnmatch(child.key(), part))
          next.emplace_back(path.empty() ? child.key() : path + "." + child.key(), child.value());
      }
    }
    if (next.empty()) {
      std::ostringstream where;
      for (const auto& [path, module] : current) {
        where << " '" << path << "' (" << module->name() << ") has children " << child_names(*module) << ";";
      }
      TORCH_CHECK(false, "parallelize_module: plan path '", pattern,
                  "' matches no submodule: no child matches '", part, "' where", where.str(),
                  " check the path against named_modules()");
    }
    current = std::move(next);
  }
  return current;
}

}  // namespace

bool fnmatch(const std::string& name, const std::string& pattern) { return fnmatch_from(name, 0, pattern, 0); }

std::vector<std::string> match_module_paths(const torch::nn::Module& module, const std::string& pattern) {
  std::vector<std::string> out;
  // resolve() only reads the tree; it needs a mutable root for shared_from_this.
  for (const auto& match : resolve(const_cast<torch::nn::Module&>(module), pattern)) out.push_back(match.first);
  return out;
}

void parallelize_module(torch::nn::Module& module, const DeviceMesh& mesh, const ParallelizePlan& plan,
                        const ParallelizeOptions& options) {
  detail::check_tp_mesh(mesh, "parallelize_module");
  DistributeModuleOptions distribute;
  distribute.src_data_rank = options.src_data_rank;
  distribute.skipped_boundary = options.skipped_boundary;
  for (const PlanEntry& entry : plan) {
    TORCH_CHECK(entry.style != nullptr, "parallelize_module: plan entry '", entry.path, "' has no style");
    distribute.style_name = entry.style->to_string();
    for (const auto& [path, sub] : resolve(module, entry.path)) {
      distribute.module_name = path.empty() ? sub->name() : path;
      try {
        entry.style->apply(*sub, mesh, distribute);
      } catch (const c10::Error& e) {
        TORCH_CHECK(false, "parallelize_module: plan entry {\"", entry.path, "\", ", entry.style->to_string(),
                    "} on '", path, "' (", sub->name(), "): ", e.msg());
      }
    }
  }
}

void parallelize_module(torch::nn::Module& module, const DeviceMesh& mesh, const ParallelStyle& style,
                        const ParallelizeOptions& options) {
  DistributeModuleOptions distribute;
  distribute.src_data_rank = options.src_data_rank;
  distribute.skipped_boundary = options.skipped_boundary;
  distribute.module_name = module.name();
  distribute.style_name = style.to_string();
  style.apply(module, mesh, distribute);
}

}  // namespace dtensor
