#pragma once
/// @file
/// `JournaledModel<M>`: a model that trains exactly as `M` and records every training step's
/// batch in a `StepJournal`.

#include <cstddef>
#include <memory>
#include <span>
#include <utility>

#include <stoke/learner.hpp>

#include "step_journal.hpp"

namespace kill_and_resume {

/// `M` (a `TrainStep` model with a `BatchType`), whose `train_step` first records its batch in
/// a journal shared by every copy. Each copy (the learner makes one a device) counts the steps
/// it ran, so the step a record names comes from the training, not from the loader.
template <class M>
class JournaledModel : public M {
 public:
  /// `model`, recording its steps in `journal` (none: records nothing).
  JournaledModel(M model, std::shared_ptr<StepJournal> journal)
      : M(std::move(model)), journal_(std::move(journal)) {}

  /// Records the step, then runs `M::train_step`.
  stoke::StepOutput train_step(const typename M::BatchType& batch, std::span<float> gradients) {
    ++steps_;
    if (journal_) {
      journal_->record_step(steps_, batch.epoch, batch.step, batch.padding, batch.indices);
    }
    return M::train_step(batch, gradients);
  }

 private:
  std::shared_ptr<StepJournal> journal_;
  std::size_t steps_ = 0;
};

}  // namespace kill_and_resume
