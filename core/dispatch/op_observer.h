// Observers of DTensor operator calls on this thread (CommDebugMode's
// operation records). Notified once per call, before sharding propagation.
//   struct Log : OpObserver { void on_dtensor_op(const OpCall& c) override { names.push_back(c.name); } ... };
//   ScopedOpObserver scope(&log);
#pragma once

#include "core/dispatch/op_call.h"

namespace dtensor {

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  /// `call.inputs` holds the input specs as passed (before redistribution);
  /// `call.outputs` is not filled yet.
  virtual void on_dtensor_op(const OpCall& call) = 0;
};

/// Registers `observer` on the calling thread while alive.
class ScopedOpObserver {
 public:
  explicit ScopedOpObserver(OpObserver* observer);
  ~ScopedOpObserver();
  ScopedOpObserver(const ScopedOpObserver&) = delete;
  ScopedOpObserver& operator=(const ScopedOpObserver&) = delete;

 private:
  OpObserver* observer_;
};

/// Called by the dispatcher; cheap when nothing observes.
void notify_op_observers(const OpCall& call);
/// True when an observer is registered on this thread.
bool has_op_observers();

}  // namespace dtensor
