// Origin frames: see Note [Collective origins] in redistribution_origin.h.
#include "core/redistribution_origin.h"

namespace dtensor {
namespace {

OriginFrame*& thread_frame() {
  thread_local OriginFrame* frame = nullptr;
  return frame;
}

}  // namespace

OriginFrame* OriginFrame::current() { return thread_frame(); }

OriginFrame::OriginFrame(bool is_explicit, const char* cause, std::string_view op, int64_t input_index,
                         const std::vector<StrategyChoice>* choices, bool weak)
    : is_explicit_(is_explicit), cause_(cause), op_(op), input_index_(input_index), choices_(choices) {
  OriginFrame*& frame = thread_frame();
  // Nesting: see Note [Collective origins].
  if (is_explicit_ && frame != nullptr && (weak || !frame->is_explicit_)) return;
  previous_ = frame;
  frame = this;
  installed_ = true;
  exchange_collective_origin_source(this);
}

OriginFrame::~OriginFrame() {
  if (!installed_) return;
  thread_frame() = previous_;
  exchange_collective_origin_source(previous_);
}

std::shared_ptr<const CollectiveOrigin> OriginFrame::origin() const {
  auto o = std::make_shared<CollectiveOrigin>();
  o->is_explicit = is_explicit_;
  o->cause = cause_;
  o->op = std::string(op_);
  o->input_index = input_index_;
  if (from != nullptr) o->from_placements = *from;
  if (to != nullptr) o->to_placements = *to;
  o->mesh_dim = mesh_dim;
  if (step_from != nullptr && step_to != nullptr) o->step = OriginStep{*step_from, *step_to};
  if (choices_ != nullptr && mesh_dim >= 0 && static_cast<size_t>(mesh_dim) < choices_->size()) {
    const StrategyChoice& c = (*choices_)[static_cast<size_t>(mesh_dim)];
    o->strategy = c.chosen;
    o->strategy_cost = c.chosen_cost;
    o->rejected_strategy = c.rejected;
    o->rejected_cost = c.rejected_cost;
  }
  return o;
}

CapturedOrigin CapturedOrigin::capture() {
  CapturedOrigin out;
  const OriginFrame* frame = OriginFrame::current();
  // Implicit frames are the dispatcher's: their ops have their own backward.
  if (frame == nullptr || !frame->is_explicit()) return out;
  out.cause = frame->cause();
  out.op = std::string(frame->op());
  return out;
}

BackwardOriginScope::BackwardOriginScope(const CapturedOrigin& captured, const char* fallback_cause,
                                         const char* fallback_op)
    : op_(captured.cause != nullptr ? captured.op + " backward" : std::string(fallback_op)),
      scope_(captured.cause != nullptr ? captured.cause : fallback_cause, op_) {}

RedistributionProgress::RedistributionProgress(const Placements& from, const Placements& to)
    : frame_(OriginFrame::current()) {
  if (frame_ == nullptr) return;
  from_ = frame_->from;
  to_ = frame_->to;
  mesh_dim_ = frame_->mesh_dim;
  step_from_ = frame_->step_from;
  step_to_ = frame_->step_to;
  frame_->from = &from;
  frame_->to = &to;
}

RedistributionProgress::~RedistributionProgress() {
  if (frame_ == nullptr) return;
  frame_->from = from_;
  frame_->to = to_;
  frame_->mesh_dim = mesh_dim_;
  frame_->step_from = step_from_;
  frame_->step_to = step_to_;
}

void RedistributionProgress::step(int mesh_dim, const Placement& from, const Placement& to) {
  if (frame_ == nullptr) return;
  frame_->mesh_dim = mesh_dim;
  frame_->step_from = &from;
  frame_->step_to = &to;
}

}  // namespace dtensor
