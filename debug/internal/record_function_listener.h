// Thread-local RecordFunction listeners for debug/: which autograd node is
// running backward on this thread (its forward sequence number), and which
// aten ops run. One LibTorch callback per thread and kind is shared by all
// listeners, so nested CommDebugModes each see every call once.
//   struct L : RecordFunctionListener { void on_backward_node(int64_t seq, bool start) override {...} };
//   ScopedRecordFunctionListener scope(&l, /*ops=*/false);
#pragma once

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <cstdint>
#include <string>

namespace dtensor::debug::internal {

class RecordFunctionListener {
 public:
  virtual ~RecordFunctionListener() = default;
  /// An autograd node starts (`start`) or ends its backward on this thread;
  /// `seq` is the node's sequence number (assigned in forward).
  virtual void on_backward_node(int64_t seq, bool start) = 0;
  /// An operator call starts on this thread (only for listeners registered
  /// with ops = true). `name` is "aten::add.Tensor".
  virtual void on_op(const std::string& name, c10::ArrayRef<const c10::IValue> inputs) = 0;
};

/// Registers `listener` on the calling thread while alive. Destroy it on the
/// thread that created it.
class ScopedRecordFunctionListener {
 public:
  ScopedRecordFunctionListener(RecordFunctionListener* listener, bool ops);
  ~ScopedRecordFunctionListener();
  ScopedRecordFunctionListener(const ScopedRecordFunctionListener&) = delete;
  ScopedRecordFunctionListener& operator=(const ScopedRecordFunctionListener&) = delete;

 private:
  RecordFunctionListener* listener_;
  bool ops_;
};

}  // namespace dtensor::debug::internal
