// Thread-local dispatcher switches.
#include "core/dispatch/dispatch_mode.h"

namespace dtensor {
namespace {
thread_local bool t_implicit_replication = false;
}  // namespace

ImplicitReplicationGuard::ImplicitReplicationGuard() : previous_(t_implicit_replication) {
  t_implicit_replication = true;
}
ImplicitReplicationGuard::~ImplicitReplicationGuard() { t_implicit_replication = previous_; }
bool ImplicitReplicationGuard::active() { return t_implicit_replication; }

}  // namespace dtensor
