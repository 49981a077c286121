// The DTensor operator dispatcher: one boxed kernel, registered at the
// PrivateUse1 dispatch key for every aten operator that has no
// CompositeImplicitAutograd kernel. See DESIGN.md, decision 2. It finds rules
// in ShardingRegistry::global() and knows none itself: dtensor::init()
// (core/init.h) registers the built-in rules and then calls this.
//   dtensor::register_dtensor_kernel();   // done by dtensor::init()
#pragma once

namespace dtensor {

/// Registers the DTensor kernel for every aten operator known now, and a
/// fallback that names operators registered later. Idempotent and
/// thread-safe. Call dtensor::init() rather than this: the kernel without
/// rules refuses every op.
void register_dtensor_kernel();

}  // namespace dtensor
