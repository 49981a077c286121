// Thread-local switches of the DTensor dispatcher, as RAII guards.
//   { dtensor::ImplicitReplicationGuard g; auto y = dt + plain; }   // plain treated as Replicate
//   { dtensor::SkipDTensorDispatchGuard g; ... }                     // ops run on local shards
#pragma once

namespace dtensor {

/// Inside it, plain tensors mixed with DTensors are treated as Replicate (as
/// PyTorch's implicit_replication context). Outside it only 0-dim plain
/// tensors are.
class ImplicitReplicationGuard {
 public:
  ImplicitReplicationGuard();
  ~ImplicitReplicationGuard();
  ImplicitReplicationGuard(const ImplicitReplicationGuard&) = delete;
  ImplicitReplicationGuard& operator=(const ImplicitReplicationGuard&) = delete;
  static bool active();

 private:
  bool previous_;
};

}  // namespace dtensor
