// Per-thread list of DTensor op observers.
#include "core/dispatch/op_observer.h"

#include <algorithm>
#include <vector>

namespace dtensor {
namespace {
std::vector<OpObserver*>& observers() {
  thread_local std::vector<OpObserver*> list;
  return list;
}
}  // namespace

ScopedOpObserver::ScopedOpObserver(OpObserver* observer) : observer_(observer) {
  observers().push_back(observer);
}

ScopedOpObserver::~ScopedOpObserver() {
  auto& list = observers();
  list.erase(std::remove(list.begin(), list.end(), observer_), list.end());
}

bool has_op_observers() { return !observers().empty(); }

void notify_op_observers(const OpCall& call) {
  auto& list = observers();
  if (list.empty()) return;
  for (OpObserver* o : std::vector<OpObserver*>(list)) o->on_dtensor_op(call);
}

}  // namespace dtensor
