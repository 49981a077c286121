// Dispatch from BackendKind to the real backends compiled into this build.
#include "backends/init/init_world.h"

#include <c10/util/Exception.h>

#include "backends/gloo/gloo_world.h"
#include "backends/launch/env.h"

#ifdef DTENSOR_HAS_NCCL
#include "backends/nccl/nccl_world.h"
#endif

namespace dtensor {
namespace {

std::shared_ptr<World> init_gloo(const LaunchEnv& env, const InitOptions& options) {
  GlooWorldOptions gloo;
  gloo.timeout = options.timeout;
  gloo.connect_timeout = options.connect_timeout;
  gloo.interface = options.gloo_interface;
  return gloo_world(env, gloo);
}

std::shared_ptr<World> init_nccl(const LaunchEnv& env, const InitOptions& options) {
#ifdef DTENSOR_HAS_NCCL
  NcclWorldOptions nccl;
  nccl.timeout = options.timeout;
  nccl.connect_timeout = options.connect_timeout;
  nccl.device_index = options.device_index;
  return nccl_world(env, nccl);
#else
  (void)env;
  (void)options;
  C10_THROW_ERROR(Error,
                  "init_world_from_env(kNccl): this build has no NCCL backend; build on a "
                  "machine with the CUDA toolkit and NCCL under $CUDA_HOME (Bazel), or with "
                  "tools/gpu_build.sh, or use BackendKind::kGloo for CPU tensors");
#endif
}

}  // namespace

bool nccl_available() {
#ifdef DTENSOR_HAS_NCCL
  return true;
#else
  return false;
#endif
}

std::shared_ptr<World> init_world_from_env(BackendKind kind, const InitOptions& options) {
  TORCH_CHECK(kind == BackendKind::kGloo || kind == BackendKind::kNccl, "init_world_from_env(",
              backend_kind_name(kind),
              "): only the multi-process backends gloo and nccl start from the launch "
              "environment; use run_fake_world(n, fn) for the fake world and "
              "solo_world(n, rank) for solo mode");
  if (kind == BackendKind::kNccl && !nccl_available()) return init_nccl(LaunchEnv{}, options);
  const LaunchEnv env = launch_env_from_environment();
  return kind == BackendKind::kGloo ? init_gloo(env, options) : init_nccl(env, options);
}

}  // namespace dtensor
