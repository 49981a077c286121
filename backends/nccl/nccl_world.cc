// NcclWorld: GPU selection, the job's store, and one ncclComm per group whose
// unique id travels through the store.
#include "backends/nccl/nccl_world.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "backends/launch/sigpipe.h"
#include "backends/launch/store.h"
#include "backends/nccl/nccl_check.h"
#include "backends/nccl/nccl_communicator.h"

namespace dtensor {
namespace {

std::string group_key(const std::vector<int64_t>& ranks) {
  std::ostringstream out;
  out << "dtensor/nccl/group";
  for (int64_t r : ranks) out << '/' << r;
  out << "/unique_id";
  return out.str();
}

int select_device(const LaunchEnv& env, const NcclWorldOptions& options) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  TORCH_CHECK(status == cudaSuccess && count > 0, "nccl world on ", env.to_string(),
              ": no CUDA device is visible (", cudaGetErrorString(status),
              "); check nvidia-smi and CUDA_VISIBLE_DEVICES, or use the gloo backend on CPU");
  const int64_t device = options.device_index >= 0 ? options.device_index : env.local_rank;
  TORCH_CHECK(device < count, "nccl world on ", env.to_string(), ": GPU ", device,
              (options.device_index >= 0 ? " (NcclWorldOptions::device_index)" : " (LOCAL_RANK)"),
              " does not exist, this host has ", count,
              " visible GPUs; start at most one process per GPU (--nproc_per_node ", count, ")");
  return static_cast<int>(device);
}

class NcclWorld final : public World {
 public:
  NcclWorld(const LaunchEnv& env, const NcclWorldOptions& options, int device,
            c10::intrusive_ptr<c10d::Store> store)
      : World(env.rank, env.world_size,
              c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(device)), options.timeout),
        env_(env),
        options_(options),
        device_index_(device),
        store_(std::move(store)) {}

  ~NcclWorld() override { exit_rendezvous(*store_, env_, options_.exit_wait); }

  BackendKind backend() const override { return BackendKind::kNccl; }

 protected:
  std::shared_ptr<Communicator> create_group(const std::vector<int64_t>& ranks) override;

 private:
  ncclUniqueId exchange_unique_id(const std::vector<int64_t>& ranks, int group_rank,
                                  const std::string& where);

  LaunchEnv env_;
  NcclWorldOptions options_;
  int device_index_;
  c10::intrusive_ptr<c10d::Store> store_;
};

ncclUniqueId NcclWorld::exchange_unique_id(const std::vector<int64_t>& ranks, int group_rank,
                                           const std::string& where) {
  ncclUniqueId id;
  const std::string key = group_key(ranks);
  if (group_rank == 0) DTENSOR_NCCL_CHECK(ncclGetUniqueId(&id), where);
  std::vector<uint8_t> value;
  try {
    if (group_rank == 0) {
      const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
      store_->set(key, std::vector<uint8_t>(bytes, bytes + sizeof(id)));
      return id;
    }
    value = store_->get(key);  // waits for group rank 0, bounded by the store timeout
  } catch (const std::exception& e) {
    std::string message(e.what());
    TORCH_CHECK(false, where, ": ", group_rank == 0 ? "publishing" : "waiting for",
                " the NCCL id of group rank 0 (global rank ", ranks.front(), ") under key '", key,
                "' in ", store_description(env_),
                " failed: ", message.substr(0, message.find('\n')),
                "; every member must call new_group with the same ranks, and the store host must be alive");
  }
  TORCH_CHECK(value.size() == sizeof(id), where, ": malformed NCCL id in the store (", value.size(),
              " bytes)");
  std::memcpy(&id, value.data(), sizeof(id));
  return id;
}

std::shared_ptr<Communicator> NcclWorld::create_group(const std::vector<int64_t>& ranks) {
  const auto it = std::find(ranks.begin(), ranks.end(), rank());
  const int group_rank = static_cast<int>(it - ranks.begin());
  const int group_size = static_cast<int>(ranks.size());
  std::ostringstream where_stream;
  where_stream << "creating nccl group " << c10::IntArrayRef(ranks) << " on global rank " << rank()
               << " (group rank " << group_rank << " of " << group_size
               << ", cuda:" << device_index_ << ")";
  const std::string where = where_stream.str();
  // The store may be gone, and NCCL's bootstrap and proxy threads start here.
  SigpipeBlock no_sigpipe;
  const ncclUniqueId id = exchange_unique_id(ranks, group_rank, where);
  DTENSOR_NCCL_CHECK(cudaSetDevice(device_index_), where);
  ncclComm_t comm = nullptr;
  DTENSOR_NCCL_CHECK(ncclCommInitRank(&comm, group_size, id, group_rank), where);
  return std::make_shared<NcclCommunicator>(ranks, rank(), shared_observers(), comm, device_index_,
                                            timeout());
}

}  // namespace

std::shared_ptr<World> nccl_world(const LaunchEnv& env, const NcclWorldOptions& options) {
  validate_launch_env(env);
  TORCH_CHECK(options.timeout.count() > 0, "nccl_world: timeout must be positive, got ",
              options.timeout.count(), " ms");
  TORCH_CHECK(options.connect_timeout.count() > 0,
              "nccl_world: connect_timeout must be positive, got ", options.connect_timeout.count(),
              " ms");
  const int device = select_device(env, options);
  DTENSOR_NCCL_CHECK(cudaSetDevice(device), "nccl world on " + env.to_string());
  auto store = connect_store(env, options.connect_timeout);
  return std::make_shared<NcclWorld>(env, options, device, std::move(store));
}

}  // namespace dtensor
