// Device selection of fake ranks (no CUDA needed: unit tested on the CPU).
#include "backends/fake/rank_device.h"

#include <c10/util/Exception.h>

namespace dtensor {

const char* fake_device_placement_name(FakeDevicePlacement placement) {
  switch (placement) {
    case FakeDevicePlacement::kOneDevice:
      return "one device";
    case FakeDevicePlacement::kRoundRobin:
      return "round robin";
  }
  return "unknown";
}

c10::Device fake_rank_device(c10::Device device, FakeDevicePlacement placement, int64_t rank,
                             int64_t cuda_devices) {
  TORCH_CHECK(device.is_cpu() || device.is_cuda(), "run_fake_world: ranks run on the CPU or on ",
              "CUDA GPUs, got FakeWorldOptions::device = ", device,
              "; for shape-only runs on meta tensors use solo_world(..., {.device = c10::kMeta})");
  if (device.is_cpu()) {
    TORCH_CHECK(placement == FakeDevicePlacement::kOneDevice,
                "run_fake_world: FakeWorldOptions::placement = ",
                fake_device_placement_name(placement),
                " spreads ranks over GPUs, but the device is the CPU; set device = c10::kCUDA "
                "or leave placement at kOneDevice");
    return device;
  }
  TORCH_CHECK(cuda_devices > 0, "run_fake_world: FakeWorldOptions::device = ", device,
              " but no CUDA device is visible to this process (or dtensor was built without "
              "CUDA: Bazel --config=cuda, or CMake with the CUDA toolkit and a CUDA LibTorch); "
              "check CUDA_VISIBLE_DEVICES and nvidia-smi, or run on c10::kCPU");
  const int64_t index = device.has_index() ? device.index() : 0;
  TORCH_CHECK(index < cuda_devices, "run_fake_world: FakeWorldOptions::device = ", device,
              " but only ", cuda_devices, " CUDA device(s) are visible (cuda:0..cuda:",
              cuda_devices - 1, ")");
  if (placement == FakeDevicePlacement::kOneDevice) {
    return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>((index + rank) % cuda_devices));
}

}  // namespace dtensor
