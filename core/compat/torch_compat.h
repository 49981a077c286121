// Where LibTorch 1.13 and 2.x differ in what core/ and its tests call: the
// version test and the few calls whose name or signature changed, so the rest
// of the code is written once. Backends keep theirs in backends/ (c10d).
//   if (DTENSOR_TORCH_AT_LEAST(2, 0)) ...;   compat::scaled_dot_product_attention(q, k, v);
#pragma once

#include <ATen/Functions.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

/// True when building against LibTorch `major`.`minor` or newer.
#define DTENSOR_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace dtensor::compat {

/// "2.11.0": the LibTorch this was compiled against.
inline const char* libtorch_version() { return TORCH_VERSION; }

/// The attention op that dtensor overrides at AutogradPrivateUse1 (see
/// core/ops/autograd_overrides.cc): 1.13's `_scaled_dot_product_attention`
/// (returns output and weights), 2.x's public `scaled_dot_product_attention`
/// (output only). Both are CompositeImplicitAutograd.
#if DTENSOR_TORCH_AT_LEAST(2, 0)
inline constexpr const char* kAttentionOp = "scaled_dot_product_attention";
#else
inline constexpr const char* kAttentionOp = "_scaled_dot_product_attention";
#endif

/// Scaled dot-product attention over [batch, heads, seq, head_dim] inputs,
/// the output only; the math path on CPU on either version.
///   at::Tensor out = compat::scaled_dot_product_attention(q, k, v, /*is_causal=*/true);
inline at::Tensor scaled_dot_product_attention(const at::Tensor& query, const at::Tensor& key,
                                               const at::Tensor& value, bool is_causal = false,
                                               const c10::optional<at::Tensor>& attn_mask = {},
                                               double dropout_p = 0.0) {
#if DTENSOR_TORCH_AT_LEAST(2, 0)
  return at::scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal);
#else
  return std::get<0>(at::_scaled_dot_product_attention(query, key, value, attn_mask, dropout_p,
                                                       /*need_attn_weights=*/false, is_causal));
#endif
}

/// A c10::WarningHandler that is handed each warning's text: 1.13 passes
/// (location, text, verbatim) to process(), 2.x a c10::Warning.
///   struct Collect : compat::WarningMessageHandler { void on_warning(const std::string& m) override; };
class WarningMessageHandler : public c10::WarningHandler {
 public:
  virtual void on_warning(const std::string& message) = 0;
#if DTENSOR_TORCH_AT_LEAST(2, 0)
  void process(const c10::Warning& warning) override { on_warning(warning.msg()); }
#else
  void process(const c10::SourceLocation&, const std::string& message, bool) override { on_warning(message); }
#endif
};

/// Installs a warning handler on this thread while in scope.
#if DTENSOR_TORCH_AT_LEAST(2, 0)
using WarningHandlerGuard = c10::WarningUtils::WarningHandlerGuard;
#else
using WarningHandlerGuard = c10::Warning::WarningHandlerGuard;
#endif

}  // namespace dtensor::compat
