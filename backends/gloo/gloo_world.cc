// GlooWorld: the job's TCPStore, one Gloo transport device, and one
// ProcessGroupGloo per group, rendezvousing under a store prefix named after
// the group's ranks.
#include "backends/gloo/gloo_world.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "backends/gloo/gloo_communicator.h"
#include "backends/launch/sigpipe.h"
#include "backends/launch/store.h"

namespace dtensor {
namespace {

// Note [Gloo device selection]
// Gloo opens one TCP pair per peer from a "device" bound to one local
// address. In order:
//   1. GlooWorldOptions::interface, else $GLOO_SOCKET_IFNAME (its first entry
//      when it is a comma-separated list, as torch.distributed accepts):
//      bind that network interface;
//   2. GlooWorldOptions::hostname: bind that address;
//   3. MASTER_ADDR is a loopback address (127.x, localhost, ::1): the whole
//      job is on this host, bind 127.0.0.1 (works without any network, as in
//      CI containers);
//   4. else c10d's default device: this host's name, falling back to loopback.

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

std::string interface_from_env() {
  const char* value = std::getenv("GLOO_SOCKET_IFNAME");
  if (value == nullptr) return "";
  std::string names(value);
  return names.substr(0, names.find(','));
}

std::shared_ptr<::gloo::transport::Device> create_device(const LaunchEnv& env,
                                                         const GlooWorldOptions& options) {
  const std::string interface =
      options.interface.empty() ? interface_from_env() : options.interface;
  std::string what;
  SigpipeBlock no_sigpipe;  // Gloo's device loop thread starts here: Note [SIGPIPE]
  try {
    if (!interface.empty()) {
      what = "network interface '" + interface + "'";
      return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
    }
    if (!options.hostname.empty() || is_loopback(env.master_addr)) {
      const std::string host = options.hostname.empty() ? "127.0.0.1" : options.hostname;
      what = "address '" + host + "'";
      return c10d::ProcessGroupGloo::createDeviceForHostname(host);
    }
    what = "this host's name";
    return c10d::ProcessGroupGloo::createDefaultDevice();
  } catch (const std::exception& e) {
    std::string message(e.what());
    message = message.substr(0, message.find('\n'));
    C10_THROW_ERROR(Error, c10::str("gloo world on ", env.to_string(),
                                    ": cannot bind a Gloo device to ", what, ": ", message,
                                    "; set GLOO_SOCKET_IFNAME to a valid interface (see `ip "
                                    "addr`) or GlooWorldOptions::hostname to an address of "
                                    "this host"));
  }
}

std::string group_key(const std::vector<int64_t>& ranks) {
  std::ostringstream out;
  out << "dtensor/gloo/group";
  for (int64_t r : ranks) out << '/' << r;
  return out.str();
}

class GlooWorld final : public World {
 public:
  GlooWorld(const LaunchEnv& env, const GlooWorldOptions& options,
            c10::intrusive_ptr<c10d::Store> store,
            std::shared_ptr<::gloo::transport::Device> device)
      : World(env.rank, env.world_size, c10::Device(c10::kCPU), options.timeout),
        env_(env),
        options_(options),
        store_(std::move(store)),
        device_(std::move(device)) {}

  ~GlooWorld() override { exit_rendezvous(*store_, env_, options_.exit_wait); }

  BackendKind backend() const override { return BackendKind::kGloo; }

 protected:
  std::shared_ptr<Communicator> create_group(const std::vector<int64_t>& ranks) override {
    const auto it = std::find(ranks.begin(), ranks.end(), rank());
    const int group_rank = static_cast<int>(it - ranks.begin());
    const int group_size = static_cast<int>(ranks.size());
    auto group_store = c10::make_intrusive<c10d::PrefixStore>(group_key(ranks), store_);
    auto pg_options = c10d::ProcessGroupGloo::Options::create(timeout());
    pg_options->devices = {device_};
    pg_options->threads = options_.threads;
    std::ostringstream where;
    where << "creating gloo group " << c10::IntArrayRef(ranks) << " on global rank " << rank()
          << " (group rank " << group_rank << " of " << group_size << ", through "
          << store_description(env_)
          << "; every member must call new_group with the same ranks, in the same order "
             "relative to its other new_group calls)";
    // The store may be gone, and the group's worker threads start here.
    SigpipeBlock no_sigpipe;
    auto process_group =
        DTENSOR_GLOO_CALL(where.str(), c10::make_intrusive<c10d::ProcessGroupGloo>(
                                           group_store, group_rank, group_size, pg_options));
    return std::make_shared<GlooCommunicator>(ranks, rank(), shared_observers(),
                                              std::move(process_group), timeout());
  }

 private:
  LaunchEnv env_;
  GlooWorldOptions options_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::shared_ptr<::gloo::transport::Device> device_;
};

}  // namespace

std::shared_ptr<World> gloo_world(const LaunchEnv& env, const GlooWorldOptions& options) {
  validate_launch_env(env);
  TORCH_CHECK(options.timeout.count() > 0, "gloo_world: timeout must be positive, got ",
              options.timeout.count(), " ms");
  TORCH_CHECK(options.connect_timeout.count() > 0,
              "gloo_world: connect_timeout must be positive, got ", options.connect_timeout.count(),
              " ms");
  TORCH_CHECK(options.threads > 0, "gloo_world: threads must be positive, got ", options.threads);
  auto device = create_device(env, options);
  auto store = connect_store(env, options.connect_timeout);
  return std::make_shared<GlooWorld>(env, options, std::move(store), std::move(device));
}

}  // namespace dtensor
