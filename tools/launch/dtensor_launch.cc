// dtensor-launch: torchrun --no-python for machines without Python. Starts N
// ranks of a program on this host with the torchrun environment, prefixes
// their output with "[rank N]", and stops them all when one fails.
//   dtensor-launch --nproc 4 -- ./examples/quickstart --steps 10
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>

#include "backends/launch/launcher.h"

namespace {

constexpr const char* kUsage =
    "usage: dtensor-launch --nproc N [--master-port P] [--master-addr A] [--timeout SECONDS]\n"
    "                      [--no-prefix] [--default-sigpipe] -- PROGRAM [ARGS...]\n"
    "Starts N processes of PROGRAM with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and\n"
    "MASTER_PORT set (as torchrun --no-python --nproc-per-node N does). A free port is\n"
    "chosen when --master-port is not given. If a rank fails, the others are stopped and\n"
    "dtensor-launch exits with that rank's exit code (128+signal if it was killed,\n"
    "124 on timeout). Ranks start with SIGPIPE ignored, so that a write to a dead peer\n"
    "fails with an error instead of killing the rank; --default-sigpipe starts them with\n"
    "the default disposition instead.\n";

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "dtensor-launch: " << message << "\n" << kUsage;
  std::exit(2);
}

int parse_int(const std::string& flag, const std::string& text) {
  try {
    size_t used = 0;
    const int value = std::stoi(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  usage_error(flag + " expects an integer, got '" + text + "'");
}

// Parses flags up to "--"; the rest is the program. Accepts "--flag V" and "--flag=V".
dtensor::launch::LaunchSpec parse_args(int argc, char** argv, bool& prefix) {
  dtensor::launch::LaunchSpec spec;
  spec.nproc = 0;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      std::exit(0);
    }
    std::string value;
    const auto eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (arg != "--no-prefix" && arg != "--default-sigpipe") {
      if (i + 1 >= argc) usage_error(arg + " needs a value");
      value = argv[++i];
    }
    if (arg == "--nproc" || arg == "--nproc-per-node" || arg == "--nproc_per_node") {
      spec.nproc = parse_int(arg, value);
    } else if (arg == "--master-port" || arg == "--master_port") {
      spec.master_port = parse_int(arg, value);
    } else if (arg == "--master-addr" || arg == "--master_addr") {
      spec.master_addr = value;
    } else if (arg == "--timeout") {
      spec.timeout = std::chrono::seconds(parse_int(arg, value));
    } else if (arg == "--no-prefix") {
      prefix = false;
    } else if (arg == "--default-sigpipe") {
      spec.ignore_sigpipe = false;
    } else {
      usage_error("unknown flag " + arg);
    }
  }
  for (; i < argc; ++i) spec.argv.emplace_back(argv[i]);
  if (spec.nproc < 1) usage_error("--nproc N (N >= 1) is required");
  if (spec.argv.empty()) usage_error("no program given after --");
  return spec;
}

int exit_code_of(const dtensor::launch::LaunchResult& result) {
  if (result.ok()) return 0;
  if (result.first_failed_rank >= 0) {
    const auto& rank = result.ranks[static_cast<size_t>(result.first_failed_rank)];
    return rank.exited ? rank.exit_code : 128 + rank.signal;
  }
  return result.timed_out ? 124 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool prefix = true;
  dtensor::launch::LaunchSpec spec = parse_args(argc, argv, prefix);
  spec.capture_output = false;
  spec.on_line = [prefix](int rank, const std::string& line) {
    if (prefix) std::cout << "[rank " << rank << "] ";
    std::cout << line << std::endl;
  };
  dtensor::launch::install_stop_signal_handlers();
  try {
    const auto result = dtensor::launch::launch_local(spec);
    if (!result.ok()) {
      std::cerr << "dtensor-launch: " << result.summary() << "\n";
      for (const auto& rank : result.ranks) {
        std::cerr << "dtensor-launch:   rank " << rank.rank << ": " << rank.status() << "\n";
      }
    }
    return exit_code_of(result);
  } catch (const std::exception& e) {
    std::cerr << "dtensor-launch: " << e.what() << "\n";
    return 1;
  }
}
