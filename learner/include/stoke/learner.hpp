#pragma once
/// @file
/// The learner: split-per-device training, models, optimizers, metrics, checkpoints, and the
/// device models' kernel contract (`stoke/learner/kernels/`).

#include <stoke/learner/checkpoint.hpp>
#include <stoke/learner/device_backend.hpp>
#include <stoke/learner/device_train_step.hpp>
#include <stoke/learner/io/atomic_file.hpp>
#include <stoke/learner/io/safetensors.hpp>
#include <stoke/learner/kernels/device_training.hpp>
#include <stoke/learner/kernels/exact_arithmetic.hpp>
#include <stoke/learner/kernels/softmax_classifier.hpp>
#include <stoke/learner/kernels/softmax_classifier_checks.hpp>
#include <stoke/learner/kernels/step_table.hpp>
#include <stoke/learner/learner.hpp>
#include <stoke/learner/metrics.hpp>
#include <stoke/learner/model/mlp.hpp>
#include <stoke/learner/model/softmax_classifier.hpp>
#include <stoke/learner/optim/adam.hpp>
#include <stoke/learner/optim/device_optimizer.hpp>
#include <stoke/learner/optim/optimizer.hpp>
#include <stoke/learner/optim/schedule.hpp>
#include <stoke/learner/optim/sgd.hpp>
#include <stoke/learner/optim/shard_state.hpp>
#include <stoke/learner/options.hpp>
#include <stoke/learner/parameter_layout.hpp>
#include <stoke/learner/train_step.hpp>
