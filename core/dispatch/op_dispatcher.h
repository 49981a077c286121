// The DTensor operator dispatcher: one boxed kernel, registered at the
// PrivateUse1 dispatch key for every aten operator that has no
// CompositeImplicitAutograd kernel. See DESIGN.md, decision 2.
//   dtensor::init();   // once, before the first DTensor op (idempotent)
#pragma once

namespace dtensor {

/// Registers the DTensor kernel for every aten operator known now and the
/// built-in sharding rules. Idempotent and thread-safe; DTensor factories and
/// DeviceMesh-based entry points call it, so users rarely need to.
void init();

}  // namespace dtensor
