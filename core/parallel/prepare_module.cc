// PrepareModuleInput / PrepareModuleOutput: boundary layouts only, the
// module's parameters are left as they are.
#include <c10/util/Exception.h>

#include <sstream>

#include "core/parallel/internal/layouts.h"
#include "core/parallel/style.h"

namespace dtensor {
namespace {

std::string layouts_string(const PrepareModuleInput::Layouts& layouts) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < layouts.size(); ++i) {
    out << (i ? ", " : "") << (layouts[i] ? layouts[i]->to_string() : "None");
  }
  out << "]";
  return out.str();
}

}  // namespace

// ---- PrepareModuleInput ----

PrepareModuleInput& PrepareModuleInput::input_layouts(Layouts layouts) {
  input_layouts_ = std::move(layouts);
  return *this;
}
PrepareModuleInput& PrepareModuleInput::desired_input_layouts(Layouts layouts) {
  desired_input_layouts_ = std::move(layouts);
  return *this;
}
PrepareModuleInput& PrepareModuleInput::use_local_output(bool value) {
  use_local_output_ = value;
  return *this;
}

std::string PrepareModuleInput::to_string() const {
  return "PrepareModuleInput(input_layouts=" + layouts_string(input_layouts_) +
         ", desired_input_layouts=" + layouts_string(desired_input_layouts_) +
         ", use_local_output=" + (use_local_output_ ? "true" : "false") + ")";
}

void PrepareModuleInput::apply_impl(torch::nn::Module& module, const DeviceMesh& mesh,
                                    const DistributeModuleOptions&) const {
  const std::string who = to_string() + " on " + module.name();
  TORCH_CHECK(input_layouts_.size() == desired_input_layouts_.size(), who,
              ": input_layouts and desired_input_layouts must have the same length");
  for (size_t i = 0; i < input_layouts_.size(); ++i) {
    TORCH_CHECK(input_layouts_[i].has_value() == desired_input_layouts_[i].has_value(), who, ": input ", i,
                " has a layout in only one of input_layouts and desired_input_layouts");
  }
  nn::register_forward_pre_hook(
      module, [in = input_layouts_, desired = desired_input_layouts_, local = use_local_output_, mesh, who](
                  torch::nn::Module&, nn::TensorList inputs) {
        TORCH_CHECK(inputs.size() == in.size(), who, ": the module got ", inputs.size(),
                    " tensor inputs but the style has ", in.size(), " input layouts");
        for (size_t i = 0; i < inputs.size(); ++i) {
          if (!in[i]) continue;
          at::Tensor t = detail::prepare_input(inputs[i], mesh, *in[i], *desired[i],
                                               who + " (input " + std::to_string(i) + ")");
          inputs[i] = local ? DTensor(t).to_local() : t;
        }
        return inputs;
      });
}

// ---- PrepareModuleOutput ----

PrepareModuleOutput& PrepareModuleOutput::output_layouts(Placement layout) {
  output_layouts_ = layout;
  return *this;
}
PrepareModuleOutput& PrepareModuleOutput::desired_output_layouts(Placement layout) {
  desired_output_layouts_ = layout;
  return *this;
}
PrepareModuleOutput& PrepareModuleOutput::use_local_output(bool value) {
  use_local_output_ = value;
  return *this;
}

std::string PrepareModuleOutput::to_string() const {
  return "PrepareModuleOutput(output_layouts=" + output_layouts_.to_string() +
         ", desired_output_layouts=" + desired_output_layouts_.to_string() +
         ", use_local_output=" + (use_local_output_ ? "true" : "false") + ")";
}

void PrepareModuleOutput::apply_impl(torch::nn::Module& module, const DeviceMesh& mesh,
                                     const DistributeModuleOptions&) const {
  const std::string who = to_string() + " on " + module.name();
  nn::register_forward_hook(
      module, [out = output_layouts_, desired = desired_output_layouts_, local = use_local_output_, mesh, who](
                  torch::nn::Module&, const nn::TensorList&, at::Tensor output) {
        return detail::prepare_output(output, mesh, out, desired, local, who + " (output)");
      });
}

}  // namespace dtensor
