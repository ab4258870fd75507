#pragma once
/// @file
/// Checkpoints: the model's weights, the optimizer's state and where training stands, in one
/// safetensors file written atomically (a crash mid-write leaves the last one readable).
/// The weights are named tensors, so PyTorch and the safetensors package read them.

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <stoke/core/error.hpp>
#include <stoke/core/json_fields.hpp>
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
/// v2: the checksum covers the "training" metadata and every tensor's name, dtype and shape
/// too (v1's covered the tensor data only, so an edited epoch loaded silently).
inline constexpr const char* kCheckpointFormat = "stoke.checkpoint.v2";

/// CRC-32 over `bytes`, continuing `crc`.
inline uLong crc32_of(uLong crc, std::span<const std::byte> bytes) {
  return crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size());
}

/// CRC-32 of the "training" metadata text, then of every tensor in name order: its name,
/// dtype, shape and data.
inline unsigned long checkpoint_crc(const std::map<std::string, TensorView>& tensors,
                                    std::string_view training) {
  const auto text = [](std::string_view s) { return std::as_bytes(std::span(s.data(), s.size())); };
  uLong crc = crc32_of(crc32(0L, Z_NULL, 0), text(training));
  for (const auto& [name, tensor] : tensors) {
    std::string head = name + '\0' + tensor.dtype;
    for (const std::size_t extent : tensor.shape) head += '\0' + std::to_string(extent);
    crc = crc32_of(crc32_of(crc, text(head + '\n')), tensor.data);
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
  const std::string training_text = training.dump();
  save_safetensors(path, tensors,
                   {{"format", detail::kCheckpointFormat},
                    {"training", training_text},
                    {"crc32", std::to_string(detail::checkpoint_crc(tensors, training_text))}});
}

/// Reads a checkpoint written by `save_checkpoint` for a model like `model`. Refuses, naming
/// the file, a truncated or corrupt file (the safetensors checks and a CRC-32 of the data and
/// the "training" metadata), a file of another format, weights whose names or shapes do not
/// fit `model`, and a "training" field of the wrong type or range (naming the field).
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
    fail(std::string("is not a stoke checkpoint this stoke reads: metadata \"format\" is ") +
         (format == metadata.end() ? "missing"
                                   : stoke::json_excerpt(nlohmann::json(format->second))) +
         ", expected \"" + detail::kCheckpointFormat + "\"");
  }
  const auto training_text = metadata.find("training");
  if (training_text == metadata.end()) fail("has no \"training\" metadata");
  std::map<std::string, TensorView> tensors;
  for (const auto& name : file.names()) tensors.emplace(name, file.tensor(name));
  const auto crc = metadata.find("crc32");
  if (crc == metadata.end() ||
      crc->second != std::to_string(detail::checkpoint_crc(tensors, training_text->second))) {
    fail(
        "is corrupt: the CRC-32 of its data and \"training\" metadata does not match the one it "
        "was written with");
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

  nlohmann::json training;
  try {
    training = nlohmann::json::parse(training_text->second);
  } catch (const nlohmann::json::exception& error) {  // also a number beyond double's range
    fail(std::string("has unreadable \"training\" metadata: ") + error.what());
  }
  const std::string where = "checkpoint '" + path.string() + "' \"training\" metadata";
  const stoke::JsonFields fields(training, where);
  checkpoint.progress.epoch = fields.size("epoch");
  checkpoint.progress.global_step = fields.size("global_step");
  checkpoint.progress.loader = loader_state_from_json(fields.at("loader"), where + " \"loader\"");
  const stoke::JsonFields sums(fields.at("epoch_sums"), where + " \"epoch_sums\"");
  checkpoint.progress.epoch_sums = {sums.finite("loss_sum"), sums.size("correct"),
                                    sums.size("count")};
  return checkpoint;
}

}  // namespace stoke
