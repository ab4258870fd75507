#pragma once
/// @file
/// stoke's host batches as `torch::Tensor`s without a copy: `to_torch` hands a batch's memory
/// to libtorch through DLPack (`at::fromDLPack`), with a deleter that keeps the batch alive.
///
/// Lifetimes are those of the Python package (`stoke_loader`):
/// - the tensors made from one batch (and every view of them) share that batch's memory;
/// - they keep it alive on their own: the loader, its workers and the batch may go first;
/// - when the last of them is gone, in whatever thread, the batch is destroyed and its buffer
///   goes back to the pool it came from (or is freed, if that pool is gone).
///
/// The tensors are on torch's CPU device (stoke's logical `cpu:N` devices share host memory)
/// and writable: the batch belongs to the consumer once it is handed over. A CUDA batch
/// becomes CUDA tensors through <stoke/libtorch/cuda_tensors.hpp>.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/DLConvertor.h>
#include <ATen/dlpack.h>

#include <stoke/data/batch.hpp>
#include <stoke/data/classification_batch.hpp>
#include <stoke/data/dlpack_types.hpp>
#include <stoke/data/host_tensor.hpp>

namespace stoke::libtorch {

/// An element type a stoke batch may hold that torch has a type for: one that has a DLPack
/// type (`stoke::dlpack::Element`: `bool`, an integer of 8 to 64 bits or `std::byte`, `float`,
/// `double`).
template <class T>
concept TorchElement = dlpack::Element<T>;

// stoke's DLPack codes (stoke/data/dlpack_types.hpp, shared with the Python package) are
// those of torch's dlpack.h.
static_assert(static_cast<int>(dlpack::TypeCode::signed_integer) == kDLInt);
static_assert(static_cast<int>(dlpack::TypeCode::unsigned_integer) == kDLUInt);
static_assert(static_cast<int>(dlpack::TypeCode::floating) == kDLFloat);
static_assert(static_cast<int>(dlpack::TypeCode::boolean) == kDLBool);
static_assert(static_cast<int>(dlpack::DeviceType::cpu) == kDLCPU);
static_assert(static_cast<int>(dlpack::DeviceType::cuda) == kDLCUDA);

namespace detail {

/// The DLPack data type of `T` (stoke's one mapping), as torch's dlpack.h spells it.
template <TorchElement T>
constexpr DLDataType dl_dtype() noexcept {
  constexpr dlpack::DataType type = dlpack::data_type_of<T>();
  return {type.code, type.bits, type.lanes};
}

/// What a DLPack tensor made by `view` owns: a share of the memory's owner and the shape and
/// strides its `DLTensor` points to. Its deleter deletes it, which lets go of that share.
struct Exported {
  std::shared_ptr<const void> owner;  ///< keeps the memory alive
  std::vector<std::int64_t> shape;    ///< `managed.dl_tensor.shape` points here
  std::vector<std::int64_t> strides;  ///< in elements, row-major
  DLManagedTensor managed{};          ///< what `at::fromDLPack` takes over
};

}  // namespace detail

/// A row-major tensor of `shape` over `data` on `device` (host memory by default), which
/// `owner` keeps alive: no copy, through DLPack. The tensor (and every view of it) holds a
/// share of `owner` and lets go of it when the last one is gone, from whatever thread. With no
/// elements, an empty tensor on `device` that shares nothing (on a CUDA device, torch's CUDA
/// allocator makes it: the program links libtorch_cuda).
template <TorchElement T>
[[nodiscard]] at::Tensor view(std::shared_ptr<const void> owner, const T* data,
                              std::span<const std::int64_t> shape, DLDevice device = {kDLCPU, 0}) {
  std::int64_t elements = 1;
  for (const std::int64_t extent : shape) elements *= extent;
  if (elements == 0 || data == nullptr) {
    const at::Device where =
        device.device_type == kDLCUDA
            ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device.device_id))
            : at::Device(at::kCPU);
    return at::empty(
        at::IntArrayRef(shape.data(), shape.size()),
        at::TensorOptions().dtype(at::toScalarType(detail::dl_dtype<T>())).device(where));
  }
  auto exported = std::make_unique<detail::Exported>();
  exported->owner = std::move(owner);
  exported->shape.assign(shape.begin(), shape.end());
  exported->strides.assign(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) {
    exported->strides[d - 1] = exported->strides[d] * shape[d];
  }
  DLTensor& tensor = exported->managed.dl_tensor;
  tensor.data = const_cast<std::remove_const_t<T>*>(data);  // NOLINT: the consumer owns it now
  tensor.device = device;
  tensor.ndim = static_cast<std::int32_t>(shape.size());
  tensor.dtype = detail::dl_dtype<T>();
  tensor.shape = exported->shape.data();
  tensor.strides = exported->strides.data();
  tensor.byte_offset = 0;
  exported->managed.manager_ctx = exported.get();
  exported->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<detail::Exported*>(self->manager_ctx);
  };
  // From here the tensor's storage owns `exported`: its deleter runs the one above.
  DLManagedTensor* managed = &exported.release()->managed;
  return at::fromDLPack(managed);
}

/// `tensor` as a torch tensor of the same shape over the same memory. The torch tensor owns
/// the stoke tensor: its buffer goes back to its pool when the last torch tensor over it is
/// gone.
template <TorchElement T>
[[nodiscard]] at::Tensor to_torch(HostTensor<T>&& tensor) {
  auto owner = std::make_shared<const HostTensor<T>>(std::move(tensor));
  std::vector<std::int64_t> shape(owner->shape().begin(), owner->shape().end());
  const T* data = owner->values().data();
  return view<T>(std::move(owner), data, shape);
}

/// `values` as a one-dimensional torch tensor over the vector's own storage.
template <TorchElement T>
[[nodiscard]] at::Tensor to_torch(std::vector<T>&& values) {
  auto owner = std::make_shared<const std::vector<T>>(std::move(values));
  const std::array<std::int64_t, 1> shape{static_cast<std::int64_t>(owner->size())};
  const T* data = owner->data();
  return view<T>(std::move(owner), data, shape);
}

/// A `ClassificationBatch` as torch tensors over its memory.
struct ClassificationTensors {
  at::Tensor inputs;  ///< `{n, pixels}`, float32: the batch's pooled buffer
  at::Tensor labels;  ///< `{n}`, int32 (`labels.to(torch::kLong)` for `cross_entropy`)
};

/// `batch` as torch tensors over its memory. Both tensors share the one batch: its buffer
/// goes back to the pool when the last tensor over either is gone.
[[nodiscard]] inline ClassificationTensors to_torch(ClassificationBatch&& batch) {
  auto owner = std::make_shared<const ClassificationBatch>(std::move(batch));
  const HostTensor<float>& inputs = owner->inputs;
  const std::vector<std::int64_t> input_shape(inputs.shape().begin(), inputs.shape().end());
  const std::array<std::int64_t, 1> label_shape{static_cast<std::int64_t>(owner->labels.size())};
  const std::int32_t* labels = owner->labels.data();
  ClassificationTensors out;
  out.inputs = view<float>(owner, inputs.values().data(), input_shape);
  out.labels = view<std::int32_t>(std::move(owner), labels, label_shape);
  return out;
}

/// A data type that `to_torch` turns into torch tensors (`HostTensor<T>`, `std::vector<T>`,
/// `ClassificationBatch`, or a type of the user's own with a `to_torch` found by lookup).
template <class D>
concept TorchConvertible = requires(D data) { to_torch(std::move(data)); };

/// A loader's batch with its data as torch tensors: epoch, step, padding and indices carry
/// over (`stoke::Batch<at::Tensor>` for a `HostTensor`, `stoke::Batch<ClassificationTensors>`
/// for a `ClassificationBatch`).
template <TorchConvertible D>
[[nodiscard]] auto to_torch(Batch<D>&& batch) {
  using Tensors = decltype(to_torch(std::move(batch.data)));
  return Batch<Tensors>{to_torch(std::move(batch.data)), batch.epoch, batch.step, batch.padding,
                        std::move(batch.indices)};
}

/// A bool tensor of `batch.size()`: true for the real rows, false for the trailing padding,
/// so that evaluation leaves padding out (`batch.mask` in Python). A fresh tensor of its own.
template <class D>
[[nodiscard]] at::Tensor mask(const Batch<D>& batch) {
  at::Tensor out = at::ones({static_cast<std::int64_t>(batch.size())}, at::kBool);
  out.slice(0, static_cast<std::int64_t>(batch.real_size())).fill_(false);
  return out;
}

}  // namespace stoke::libtorch
