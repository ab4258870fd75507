#pragma once
/// @file
/// What a device replica needs to run its step as a captured graph: the `CapturingBackend`
/// concept, the `ChecksBatches` concept of a model, and `detail::BatchSlot`, the fixed place a
/// captured step reads its batch from.

#include <concepts>
#include <cstddef>
#include <functional>
#include <optional>
#include <tuple>
#include <utility>

#include <stoke/core/backend.hpp>
#include <stoke/data/batch.hpp>
#include <stoke/data/device_image_batch.hpp>
#include <stoke/learner/device_backend.hpp>

namespace stoke {

/// A `DeviceBackend` that can capture the training operations of a step once and launch them
/// again with one call (CUDA graphs).
///
/// Requirements:
/// 1. `B::capture_step(device, record)` returns a `B::StepGraph` holding what `record()`
///    enqueued on `device` through the `DeviceBackend` operations, none of it run yet; every
///    tensor they touch exists already, and their scalar arguments are fixed in the graph;
/// 2. `graph.current()` says whether every tensor the graph touches still holds the memory it
///    held at capture (a tensor made anew does not);
/// 3. `graph.launch()` runs the captured work once, ordered and marked as the operations would
///    have been, given `current()`;
/// 4. `B::copy(target, source)` copies one tensor into the start of another of its device.
template <class B>
concept CapturingBackend =
    DeviceBackend<B> && std::movable<typename B::StepGraph> &&
    requires(const device_t<B>& device, const std::function<void()>& record,
             typename B::StepGraph& graph, const typename B::StepGraph& const_graph,
             typename B::Tensor& target, const typename B::Tensor& source) {
      { B::capture_step(device, record) } -> std::same_as<typename B::StepGraph>;
      { const_graph.current() } -> std::convertible_to<bool>;
      graph.launch();
      B::copy(target, source);
    };

/// A model whose host checks of a batch run apart from its device work: `m.check(batch)`
/// throws what `m.train_step(batch, ...)` would throw for it, and enqueues nothing.
template <class M, class BatchT>
concept ChecksBatches = requires(const M& model, const BatchT& batch) { model.check(batch); };

namespace detail {

/// The place a captured step reads its batch from: none for a batch type it does not know.
template <class B, class BatchT>
struct BatchSlot {
  static constexpr bool available = false;  ///< no captured step for such batches
};

/// The place a captured step reads a `DeviceImageBatch` from: inputs and device labels of a
/// fixed size, into which each batch of that shape is copied on the device before the graph
/// runs (a batch's own memory changes from batch to batch; a graph's may not).
template <class B, class Buffer, class Fence>
  requires std::same_as<Buffer, typename B::Tensor>
struct BatchSlot<B, Batch<DeviceImageBatch<Buffer, Fence>>> {
  static constexpr bool available = true;  ///< captured steps read such batches from here
  using BatchType = Batch<DeviceImageBatch<Buffer, Fence>>;  ///< what it holds
  /// What must agree for a batch to go through the same graph: rows, values a row, padding,
  /// and the bytes of inputs and device labels.
  using Shape = std::tuple<std::size_t, std::size_t, std::size_t, std::size_t, std::size_t>;

  /// The shape of `batch`.
  static Shape shape_of(const BatchType& batch) {
    return {batch.data.rows, batch.data.row_size, batch.padding, batch.data.inputs.size(),
            batch.data.device_labels.size()};
  }

  /// Copies `batch` into the slot (its device memory on the device, its host fields on the
  /// host), making the slot's tensors first where they do not have `batch`'s shape.
  void fill(const device_t<B>& device, const BatchType& batch) {
    if (!shape || *shape != shape_of(batch)) {
      held.data.inputs = B::zeros(device, batch.data.inputs.size() / sizeof(float));
      held.data.device_labels = B::zeros(device, batch.data.device_labels.size() / sizeof(float));
      held.data.rows = batch.data.rows;
      held.data.row_size = batch.data.row_size;
      shape = shape_of(batch);
    }
    B::copy(held.data.inputs, batch.data.inputs);
    B::copy(held.data.device_labels, batch.data.device_labels);
    held.data.labels.assign(batch.data.labels.begin(), batch.data.labels.end());
    held.indices.assign(batch.indices.begin(), batch.indices.end());
    held.padding = batch.padding;
    held.epoch = batch.epoch;
    held.step = batch.step;
  }

  BatchType held;              ///< the batch the graph reads
  std::optional<Shape> shape;  ///< the shape of `held`, once made
};

/// The batch type a model trains on (`Model::BatchType`), or void.
template <class Model>
struct model_batch {
  using type = void;
};
template <class Model>
  requires requires { typename Model::BatchType; }
struct model_batch<Model> {
  using type = typename Model::BatchType;
};

/// A replica's captured step: `std::optional<B::StepGraph>` where `B` captures, else a
/// placeholder that is never set.
template <class B>
struct optional_step_graph {
  using type = std::optional<int>;
};
template <CapturingBackend B>
struct optional_step_graph<B> {
  using type = std::optional<typename B::StepGraph>;
};

/// The shape of a slot's batches (`std::optional<Slot::Shape>`), else a placeholder.
template <class Slot>
struct optional_slot_shape {
  using type = std::optional<int>;
};
template <class Slot>
  requires Slot::available
struct optional_slot_shape<Slot> {
  using type = std::optional<typename Slot::Shape>;
};

}  // namespace detail
}  // namespace stoke
