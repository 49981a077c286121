// seeded_init: torch::nn's default initialisations drawn from one private generator.
#include "examples/models/seeded_init.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <cmath>

namespace dtensor::examples {

at::Generator make_generator(uint64_t seed) { return at::detail::createCPUGenerator(seed); }

namespace {

// The draws happen on a CPU tensor of the parameter's shape and dtype (the
// generator is a CPU one), then land on the parameter's device.
void uniform(at::Tensor& p, double bound, at::Generator& gen) {
  if (p.is_cpu()) {
    p.uniform_(-bound, bound, gen);
  } else {
    p.copy_(at::empty(p.sizes(), p.options().device(c10::kCPU)).uniform_(-bound, bound, gen));
  }
}

void normal(at::Tensor& p, double std, at::Generator& gen) {
  if (p.is_cpu()) {
    p.normal_(0.0, std, gen);
  } else {
    p.copy_(at::empty(p.sizes(), p.options().device(c10::kCPU)).normal_(0.0, std, gen));
  }
}

void init_module(torch::nn::Module& m, at::Generator& gen) {
  if (auto* lin = dynamic_cast<torch::nn::LinearImpl*>(&m)) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(lin->weight.size(1)));
    uniform(lin->weight, bound, gen);
    if (lin->bias.defined()) uniform(lin->bias, bound, gen);
  } else if (auto* emb = dynamic_cast<torch::nn::EmbeddingImpl*>(&m)) {
    normal(emb->weight, 1.0, gen);
  } else if (auto* norm = dynamic_cast<torch::nn::LayerNormImpl*>(&m)) {
    if (norm->weight.defined()) norm->weight.fill_(1.0);
    if (norm->bias.defined()) norm->bias.fill_(0.0);
  } else {
    for (auto& p : m.named_parameters(/*recurse=*/false)) normal(p.value(), 0.02, gen);
  }
}

}  // namespace

void seeded_init(torch::nn::Module& module, uint64_t seed) {
  torch::NoGradGuard no_grad;
  at::Generator gen = make_generator(seed);
  // include_self=false: usable from a constructor (no shared_from_this yet).
  init_module(module, gen);
  for (const auto& item : module.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    init_module(*item.value(), gen);
  }
}

}  // namespace dtensor::examples
