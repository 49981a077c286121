// Deterministic parameter initialisation from a private generator, so that
// every rank of a fake world (threads sharing LibTorch's global generator)
// and the single-device reference build bit-identical models, on any device.
//   auto mlp = examples::MLP();  examples::seeded_init(*mlp, /*seed=*/5);
#pragma once

#include <ATen/core/Generator.h>
#include <torch/nn/module.h>

#include <cstdint>

namespace dtensor::examples {

/// A CPU generator seeded with `seed`, independent of the global one.
at::Generator make_generator(uint64_t seed);

/// Re-initialises every parameter of `module`'s tree (plain tensors, before
/// distributing) in named_modules() order, like torch::nn's defaults:
/// Linear weight and bias uniform(-1/sqrt(in), 1/sqrt(in)); Embedding weight
/// normal(0, 1); LayerNorm weight 1, bias 0. Other parameters: normal(0, 0.02).
/// Values are drawn on the CPU in each parameter's dtype and copied to its
/// device, so a module on a GPU gets the bits a CPU module gets.
/// Example: `seeded_init(*mlp, 5)` after `mlp->to(c10::Device("cuda:0"))`.
void seeded_init(torch::nn::Module& module, uint64_t seed);

}  // namespace dtensor::examples
