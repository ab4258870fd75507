// The program that scripts/soak kills and resumes: the Fashion-MNIST example's training (its
// data, model, schedule and learner on 2 CPU devices), on part of the data if asked, with a
// checkpoint every few steps and a journal of every step's dataset indices, so that a run
// killed at any moment and resumed can be checked for every sample used exactly once in its
// committed steps and for the same final checkpoint, byte for byte, as an uninterrupted run.
#include <cstddef>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>
#include <memory>

#include <CLI/CLI.hpp>

#include "fashion_mnist.hpp"
#include "journaled_model.hpp"
#include "step_journal.hpp"

namespace {

/// The learner of the Fashion-MNIST example, with a model that journals its steps.
using JournaledLearner =
    stoke::Learner<stoke::cpu::Backend, kill_and_resume::JournaledModel<stoke::Mlp>, stoke::Adam,
                   stoke::CosineLr>;

/// The global step of `learner`'s checkpoint when it resumes from one, else 0.
std::size_t first_step(const JournaledLearner& learner, bool resume) {
  const auto path = learner.checkpoint_path();
  if (!resume || !std::filesystem::exists(path)) return 0;
  return stoke::load_checkpoint(path, learner.model(), learner.model().parameter_count())
      .progress.global_step;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stoke: Fashion-MNIST training that checkpoints often and journals its steps"};
  fashion_mnist::Flags flags;
  flags.epochs = 2;
  fashion_mnist::add_flags(app, flags, "CPU devices, one thread and replica each");
  std::size_t checkpoint_every = 10;
  std::size_t train_samples = 0;
  std::size_t test_samples = 0;
  std::size_t stop_after = 0;
  std::filesystem::path journal_path;
  app.add_option("--checkpoint-every", checkpoint_every, "also checkpoint every N steps")
      ->capture_default_str();
  app.add_option("--train-samples", train_samples, "train on the first N images (0: all)");
  app.add_option("--test-samples", test_samples, "validate on the first N images (0: all)");
  app.add_option("--stop-after-steps", stop_after, "stop once N steps are done, as a kill would");
  app.add_option("--journal", journal_path, "append every step's dataset indices to this file");
  CLI11_PARSE(app, argc, argv);

  try {
    const fashion_mnist::Data data = fashion_mnist::load(flags.data);
    const auto part = [](std::size_t samples) {
      return stoke::partial(0, samples == 0 ? std::numeric_limits<std::size_t>::max() : samples);
    };
    auto train = fashion_mnist::train_loader(data.train | part(train_samples), flags.batch_size,
                                             flags.seed, flags.workers);
    auto test = fashion_mnist::test_loader(data.test | part(test_samples), flags.workers);

    const std::size_t steps_per_epoch = train.num_batches() / flags.devices;
    const stoke::LearnerOptions options{.epochs = flags.epochs,
                                        .checkpoint_dir = flags.checkpoint_dir,
                                        .checkpoint_every_steps = checkpoint_every,
                                        .resume = flags.resume,
                                        .log = nullptr,
                                        .stop_after_steps = stop_after};
    auto journal = journal_path.empty()
                       ? nullptr
                       : std::make_shared<kill_and_resume::StepJournal>(journal_path);
    JournaledLearner learner(
        kill_and_resume::JournaledModel(fashion_mnist::model(flags.seed), journal), stoke::Adam{},
        fashion_mnist::schedule(flags.learning_rate, flags.epochs, steps_per_epoch),
        stoke::cpu::Backend::devices(flags.devices), options);
    if (journal) journal->record_run(first_step(learner, flags.resume));
    const stoke::FitResult result = learner.fit(std::move(train), std::move(test));
    std::printf("done: global step %zu (%zu steps an epoch, %s)\n", result.global_step,
                steps_per_epoch, result.resumed ? "resumed" : "from the start");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kill_and_resume: %s\n", error.what());
    return 1;
  }
  return 0;
}
