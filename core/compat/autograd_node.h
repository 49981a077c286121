// New autograd nodes, deleted the way the LibTorch at hand wants: through
// torch::autograd::deleteNode where it exists (up to 2.11 at least: it
// deletes long graphs iteratively, without deep recursion); LibTorch 2.15
// removed it, and a plain delete is what its nodes expect.
//   auto node = compat::make_autograd_node<RedistributeBackward>();
#pragma once

#include <torch/csrc/autograd/function.h>

#include <memory>

namespace dtensor::compat {
namespace detail {

// Found by ordinary lookup; LibTorch's torch::autograd::deleteNode(Node*), when
// it exists, is found by argument-dependent lookup through the Node*, and as
// a non-template it wins. So this only runs where LibTorch has none.
template <typename N>
void deleteNode(N* node) {
  delete node;
}

inline void delete_autograd_node(torch::autograd::Node* node) { deleteNode(node); }

}  // namespace detail

/// A default-constructed node of type T (a torch::autograd::Node) in a
/// shared_ptr with LibTorch's deleter.
template <typename T>
std::shared_ptr<T> make_autograd_node() {
  return std::shared_ptr<T>(new T(), &detail::delete_autograd_node);
}

}  // namespace dtensor::compat
