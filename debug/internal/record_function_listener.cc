// One thread-local RecordFunction callback per kind, fanned out to listeners.
#include "debug/internal/record_function_listener.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "core/dispatch/op_name.h"

namespace dtensor::debug::internal {
namespace {

struct ThreadListeners {
  std::vector<RecordFunctionListener*> backward;
  std::vector<RecordFunctionListener*> ops;
  at::CallbackHandle backward_handle = 0;
  at::CallbackHandle ops_handle = 0;
};

ThreadListeners& listeners() {
  thread_local ThreadListeners tl;
  return tl;
}

// A non-null context, so that the end callback runs whatever LibTorch does
// with null ones.
struct NodeContext : at::ObserverContext {};

std::unique_ptr<at::ObserverContext> backward_start(const at::RecordFunction& fn) {
  for (RecordFunctionListener* l : std::vector<RecordFunctionListener*>(listeners().backward)) {
    l->on_backward_node(fn.seqNr(), /*start=*/true);
  }
  return std::make_unique<NodeContext>();
}

void backward_end(const at::RecordFunction& fn, at::ObserverContext* /*ctx*/) {
  for (RecordFunctionListener* l : std::vector<RecordFunctionListener*>(listeners().backward)) {
    l->on_backward_node(fn.seqNr(), /*start=*/false);
  }
}

std::unique_ptr<at::ObserverContext> op_start(const at::RecordFunction& fn) {
  // Operators by their full name ("aten::add.Tensor"); other record
  // functions by the name they were given.
  std::string name = fn.name();
  if (auto op = fn.operator_name()) name = full_op_name(*op);
  for (RecordFunctionListener* l : std::vector<RecordFunctionListener*>(listeners().ops))
    l->on_op(name, fn.inputs());
  return nullptr;
}

void add_to(std::vector<RecordFunctionListener*>& list, at::CallbackHandle& handle, RecordFunctionListener* l,
            at::RecordFunctionCallback callback) {
  if (list.empty()) handle = at::addThreadLocalCallback(std::move(callback));
  list.push_back(l);
}

void remove_from(std::vector<RecordFunctionListener*>& list, at::CallbackHandle& handle,
                 RecordFunctionListener* l) {
  auto it = std::find(list.begin(), list.end(), l);
  if (it == list.end()) return;
  list.erase(it);
  if (list.empty() && handle != 0) {
    at::removeCallback(handle);
    handle = 0;
  }
}

}  // namespace

ScopedRecordFunctionListener::ScopedRecordFunctionListener(RecordFunctionListener* listener, bool ops)
    : listener_(listener), ops_(ops) {
  ThreadListeners& tl = listeners();
  add_to(tl.backward, tl.backward_handle, listener,
         at::RecordFunctionCallback(&backward_start, &backward_end)
             .scopes({at::RecordScope::BACKWARD_FUNCTION}));
  if (ops_) {
    add_to(tl.ops, tl.ops_handle, listener,
           at::RecordFunctionCallback(&op_start).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
  }
}

ScopedRecordFunctionListener::~ScopedRecordFunctionListener() {
  ThreadListeners& tl = listeners();
  remove_from(tl.backward, tl.backward_handle, listener_);
  if (ops_) remove_from(tl.ops, tl.ops_handle, listener_);
}

}  // namespace dtensor::debug::internal
