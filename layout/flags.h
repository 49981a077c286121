// Command-line flags for dtensor's programs (the comm report, the planner,
// the viewer, the quickstart): "--name value", "--name=value", switches and
// positional arguments, with errors that name the flag.
//   Flags flags;
//   flags.value("--model", &model).value("--top", &top).toggle("--list", &list);
//   std::string error;
//   if (!flags.parse(argc, argv, error)) { ...print usage, and error if set... }
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dtensor {

class Flags {
 public:
  // Called with the flag's values; throws std::invalid_argument (its what()
  // becomes the error) for a value it refuses.
  using Setter = std::function<void(const std::vector<std::string>& values)>;

  // A flag taking one value, stored as given.
  Flags& value(const std::string& name, std::string* out);
  // The same, for a value that is unset unless given.
  Flags& value(const std::string& name, std::optional<std::string>* out);
  // A flag taking a whole number or a number: the whole value must parse
  // ("12abc" is refused).
  Flags& value(const std::string& name, int64_t* out);
  Flags& value(const std::string& name, int* out);
  Flags& value(const std::string& name, double* out);
  // A flag taking `arity` values ("--diff BEFORE AFTER"), handled by `set`.
  Flags& custom(const std::string& name, int arity, Setter set);
  // A flag without a value: sets `*out` to true.
  Flags& toggle(const std::string& name, bool* out);
  // Arguments that do not start with "--", one call each (without this,
  // they are errors). What `set` throws is the error as it is.
  Flags& positional(Setter set);

  // Reads `args` (argv without the program name). Returns false with `error`
  // naming the flag for an unknown flag ("unknown flag --x"), a missing value
  // ("--x: missing value") or a refused one ("--x: <why>"); false with
  // `error` empty for --help or -h (print the usage).
  bool parse(const std::vector<std::string>& args, std::string& error) const;
  bool parse(int argc, const char* const* argv, std::string& error) const {
    return parse(std::vector<std::string>(argv + (argc > 0 ? 1 : 0), argv + argc), error);
  }

 private:
  struct Spec {
    int arity;
    Setter set;
  };
  std::map<std::string, Spec> specs_;
  Setter positional_;
};

}  // namespace dtensor
