// Which device each rank of a fake world runs on: all on one GPU, or spread
// round-robin over the visible GPUs; CPU ranks stay on the CPU.
//   fake_rank_device(c10::Device(c10::kCUDA, 1), FakeDevicePlacement::kRoundRobin,
//                    /*rank=*/2, /*cuda_devices=*/4)   // cuda:3
#pragma once

#include <c10/core/Device.h>

#include <cstdint>

namespace dtensor {

/// How CUDA ranks of a fake world map to GPUs.
enum class FakeDevicePlacement {
  kOneDevice,   // every rank on the options' device (cuda = cuda:0)
  kRoundRobin,  // rank r on GPU (index + r) % visible GPUs, index = the options' (0 if none)
};

/// "one device" / "round robin".
const char* fake_device_placement_name(FakeDevicePlacement placement);

/// The device of `rank` in a fake world whose options ask for `device` with
/// `placement`, when `cuda_devices` GPUs are visible (0 without CUDA). Throws
/// a c10::Error saying what to change for a device type other than CPU or
/// CUDA, for CUDA when no GPU is visible (or this build has no CUDA), for a
/// GPU index past the visible ones, and for round-robin on the CPU.
c10::Device fake_rank_device(c10::Device device, FakeDevicePlacement placement, int64_t rank,
                             int64_t cuda_devices);

}  // namespace dtensor
