// Implementation of command-line flags. See flags.h.
#include "layout/flags.h"

#include <charconv>
#include <stdexcept>
#include <system_error>

namespace dtensor {
namespace {

template <typename T>
T parse_number(const std::string& text, const char* what) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) {
    throw std::invalid_argument("'" + text + "' is not " + what);
  }
  return value;
}

}  // namespace

Flags& Flags::value(const std::string& name, std::string* out) {
  return custom(name, 1, [out](const std::vector<std::string>& v) { *out = v[0]; });
}

Flags& Flags::value(const std::string& name, std::optional<std::string>* out) {
  return custom(name, 1, [out](const std::vector<std::string>& v) { *out = v[0]; });
}

Flags& Flags::value(const std::string& name, int64_t* out) {
  return custom(name, 1, [out](const std::vector<std::string>& v) {
    *out = parse_number<int64_t>(v[0], "a whole number");
  });
}

Flags& Flags::value(const std::string& name, int* out) {
  return custom(name, 1, [out](const std::vector<std::string>& v) {
    *out = parse_number<int>(v[0], "a whole number");
  });
}

Flags& Flags::value(const std::string& name, double* out) {
  return custom(name, 1, [out](const std::vector<std::string>& v) {
    *out = parse_number<double>(v[0], "a number");
  });
}

Flags& Flags::custom(const std::string& name, int arity, Setter set) {
  specs_[name] = Spec{arity, std::move(set)};
  return *this;
}

Flags& Flags::toggle(const std::string& name, bool* out) {
  return custom(name, 0, [out](const std::vector<std::string>&) { *out = true; });
}

Flags& Flags::positional(Setter set) {
  positional_ = std::move(set);
  return *this;
}

bool Flags::parse(const std::vector<std::string>& args, std::string& error) const {
  error.clear();
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    if (flag == "--help" || flag == "-h") return false;
    if (flag.rfind("--", 0) != 0 && positional_) {
      try {
        positional_({flag});
      } catch (const std::invalid_argument& e) {
        error = e.what();
        return false;
      }
      continue;
    }
    std::vector<std::string> values;
    if (const size_t eq = flag.find('='); eq != std::string::npos) {
      values.push_back(flag.substr(eq + 1));  // --name=value
      flag.resize(eq);
    }
    const auto spec = specs_.find(flag);
    if (spec == specs_.end()) {
      error = "unknown flag " + flag + " (--help lists them)";
      return false;
    }
    const size_t arity = static_cast<size_t>(spec->second.arity);
    if (!values.empty() && arity != 1) {
      error = flag + ": takes " + std::to_string(arity) + " values, not '=" + values[0] + "'";
      return false;
    }
    while (values.size() < arity) {
      if (++i >= args.size()) {
        error = flag +
                (arity == 1 ? ": missing value" : ": needs " + std::to_string(arity) + " values");
        return false;
      }
      values.push_back(args[i]);
    }
    try {
      spec->second.set(values);
    } catch (const std::invalid_argument& e) {
      error = flag + ": " + e.what();
      return false;
    }
  }
  return true;
}

}  // namespace dtensor
