// New autograd nodes, held and deleted the way the LibTorch at hand wants.
// Up to 2.11 a node lives in a std::shared_ptr whose deleter is
// torch::autograd::deleteNode (it deletes long graphs iteratively, without
// deep recursion); LibTorch 2.15 holds nodes in a c10::intrusive_ptr (an
// Edge's `function` says which) and removed deleteNode.
//   compat::AutogradNodePtr<RedistributeBackward> node =
//       compat::make_autograd_node<RedistributeBackward>();
//   torch::autograd::set_history(out, node);
#pragma once

#include <torch/csrc/autograd/edge.h>
#include <torch/csrc/autograd/function.h>

#include <memory>
#include <type_traits>

namespace dtensor::compat {
namespace detail {

// Found by ordinary lookup; LibTorch's torch::autograd::deleteNode(Node*), when
// it exists, is found by argument-dependent lookup through the Node*, and as
// a non-template it wins. Only instantiated where nodes are shared_ptrs.
template <typename N>
void deleteNode(N* node) {
  delete node;
}

inline void delete_autograd_node(torch::autograd::Node* node) { deleteNode(node); }

// The pointer type LibTorch keeps nodes in: shared_ptr (<= 2.11) or intrusive_ptr (2.15).
using NodeHandle = decltype(torch::autograd::Edge::function);
inline constexpr bool kIntrusiveNodes =
    !std::is_same_v<NodeHandle, std::shared_ptr<torch::autograd::Node>>;

template <typename T, bool Intrusive = kIntrusiveNodes>
struct NodePtr {
  using type = std::shared_ptr<T>;
};
template <typename T>
struct NodePtr<T, true> {
  using type = c10::intrusive_ptr<T>;
};

}  // namespace detail

/// The owning pointer to a node of type T (a torch::autograd::Node).
template <typename T>
using AutogradNodePtr = typename detail::NodePtr<T>::type;

/// A default-constructed node of type T (a torch::autograd::Node), owned the
/// way this LibTorch owns nodes.
template <typename T>
AutogradNodePtr<T> make_autograd_node() {
  if constexpr (detail::kIntrusiveNodes) {
    return c10::make_intrusive<T>();
  } else {
    return AutogradNodePtr<T>(new T(), &detail::delete_autograd_node);
  }
}

}  // namespace dtensor::compat
