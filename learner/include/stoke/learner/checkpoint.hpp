#pragma once
/// @file
/// Checkpoints: the model's weights, the optimizer's state and where training stands, in one
/// safetensors file written atomically (a crash mid-write leaves the last one readable).
/// The weights are named tensors, so PyTorch and the safetensors package read them.

#include <zlib.h>

#include <cstddef>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <stoke/core/error.hpp>
#include <stoke/data/state.hpp>
#include <stoke/learner/io/safetensors.hpp>
#include <stoke/learner/parameter_layout.hpp>
#include <stoke/learner/train_step.hpp>

namespace stoke {

/// Where training stands when a checkpoint is written.
struct TrainingProgress {
  std::size_t epoch = 0;        ///< the epoch in progress (or next to start)
  std::size_t global_step = 0;  ///< optimizer steps taken so far
  LoaderState loader;           ///< the training loader's state
  StepOutput epoch_sums;        ///< training sums of `epoch` so far
};

/// What a checkpoint holds.
struct Checkpoint {
  std::vector<float> parameters;       ///< the flat parameter buffer
  std::vector<float> optimizer_state;  ///< the optimizer's `state()`
  TrainingProgress progress;           ///< where training stands
};

namespace detail {
inline constexpr const char* kCheckpointFormat = "stoke.checkpoint.v1";

/// CRC-32 of the data of every tensor, in name order.
inline unsigned long checkpoint_crc(const std::map<std::string, TensorView>& tensors) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (const auto& [name, tensor] : tensors) {
    crc = crc32(crc, reinterpret_cast<const Bytef*>(tensor.data.data()),
                static_cast<uInt>(tensor.data.size()));
  }
  return crc;
}

/// The parameters as named tensors (or one `parameters` tensor).
template <class M>
std::vector<ParameterTensor> layout_of(const M& model, std::size_t count) {
  if constexpr (NamedParameters<M>) {
    return model.parameter_layout();
  } else {
    (void)model;
    return {ParameterTensor{"parameters", {count}, 0}};
  }
}

inline std::size_t element_count(const std::vector<std::size_t>& shape) {
  std::size_t count = 1;
  for (const std::size_t extent : shape) count *= extent;
  return count;
}
}  // namespace detail

/// Writes `model`'s parameters, `optimizer_state` and `progress` to `path` atomically.
template <class M>
void save_checkpoint(const std::filesystem::path& path, const M& model,
                     std::span<const float> parameters, std::span<const float> optimizer_state,
                     const TrainingProgress& progress) {
  std::map<std::string, TensorView> tensors;
  for (const auto& tensor : detail::layout_of(model, parameters.size())) {
    tensors.emplace(
        "model." + tensor.name,
        make_tensor_view<float>(
            parameters.subspan(tensor.offset, detail::element_count(tensor.shape)), tensor.shape));
  }
  tensors.emplace("optimizer.state",
                  make_tensor_view<float>(optimizer_state, {optimizer_state.size()}));
  const nlohmann::json training = {{"epoch", progress.epoch},
                                   {"global_step", progress.global_step},
                                   {"loader", to_json(progress.loader)},
                                   {"epoch_sums",
                                    {{"loss_sum", progress.epoch_sums.loss_sum},
                                     {"correct", progress.epoch_sums.correct},
                                     {"count", progress.epoch_sums.count}}}};
  save_safetensors(path, tensors,
                   {{"format", detail::kCheckpointFormat},
                    {"training", training.dump()},
                    {"crc32", std::to_string(detail::checkpoint_crc(tensors))}});
}

/// Reads a checkpoint written by `save_checkpoint` for a model like `model`. Refuses, naming
/// the file, a truncated or corrupt file (the safetensors checks and a CRC-32 of the data), a
/// file of another format, and weights whose names or shapes do not fit `model`.
template <class M>
Checkpoint load_checkpoint(const std::filesystem::path& path, const M& model,
                           std::size_t parameter_count) {
  const SafetensorsFile file = load_safetensors(path);
  const auto fail = [&](const std::string& why) -> void {
    throw InputError("stoke: checkpoint '" + path.string() + "' " + why);
  };
  const auto& metadata = file.metadata();
  const auto format = metadata.find("format");
  if (format == metadata.end() || format->second != detail::kCheckpointFormat) {
    fail(std::string("is not a stoke checkpoint (metadata \"format\" is not \"") +
         detail::kCheckpointFormat + "\")");
  }
  std::map<std::string, TensorView> tensors;
  for (const auto& name : file.names()) tensors.emplace(name, file.tensor(name));
  const auto crc = metadata.find("crc32");
  if (crc == metadata.end() || crc->second != std::to_string(detail::checkpoint_crc(tensors))) {
    fail("is corrupt: the CRC-32 of its data does not match the one it was written with");
  }

  Checkpoint checkpoint;
  checkpoint.parameters.assign(parameter_count, 0.0f);
  for (const auto& tensor : detail::layout_of(model, parameter_count)) {
    const std::string name = "model." + tensor.name;
    if (!file.contains(name)) fail("has no tensor '" + name + "' for this model");
    if (file.tensor(name).shape != tensor.shape) {
      fail("has tensor '" + name + "' of another shape than this model's");
    }
    const auto values = file.values<float>(name);
    std::copy(values.begin(), values.end(),
              checkpoint.parameters.begin() + static_cast<std::ptrdiff_t>(tensor.offset));
  }
  if (!file.contains("optimizer.state")) fail("has no tensor 'optimizer.state'");
  checkpoint.optimizer_state = file.values<float>("optimizer.state");

  const auto training_text = metadata.find("training");
  if (training_text == metadata.end()) fail("has no \"training\" metadata");
  try {
    const auto training = nlohmann::json::parse(training_text->second);
    checkpoint.progress.epoch = training.at("epoch").get<std::size_t>();
    checkpoint.progress.global_step = training.at("global_step").get<std::size_t>();
    checkpoint.progress.loader = loader_state_from_json(training.at("loader"));
    const auto& sums = training.at("epoch_sums");
    checkpoint.progress.epoch_sums = {sums.at("loss_sum").get<double>(),
                                      sums.at("correct").get<std::size_t>(),
                                      sums.at("count").get<std::size_t>()};
  } catch (const nlohmann::json::exception& error) {
    fail(std::string("has unreadable \"training\" metadata: ") + error.what());
  }
  return checkpoint;
}

}  // namespace stoke
