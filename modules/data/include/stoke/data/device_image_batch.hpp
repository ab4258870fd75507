#pragma once
/// @file
/// `DeviceImageBatch`: a batch of labelled images in a device's memory, the shape every device
/// backend's image batchers return (`cuda::ImageBatch`, `vulkan::ImageBatch`).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stoke {

/// A batch of labelled images whose values and labels lie in device memory (`Buffer`, a
/// backend's buffer with a `device()`) and are ready when `ready` (the backend's `Fence`)
/// signals. The labels are also kept on the host, where models check them and metrics count.
template <class Buffer, class Fence>
struct DeviceImageBatch {
  Buffer inputs;                     ///< `rows x row_size` float32, row-major, on the device
  std::vector<std::int32_t> labels;  ///< the class of every row (host memory)
  std::size_t rows = 0;              ///< images in the batch
  std::size_t row_size = 0;          ///< values per image
  Fence ready;                       ///< signals when `inputs` and `device_labels` hold them
  Buffer device_labels;              ///< `labels` as int32 on the device

  /// The device the batch lives on.
  [[nodiscard]] decltype(auto) device() const noexcept { return inputs.device(); }
};

}  // namespace stoke
