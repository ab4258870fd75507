#pragma once
/// @file
/// DLPack capsules of a batch's column whose deleter never touches Python.
///
/// A consumer (PyTorch, JAX, NumPy) calls a DLPack tensor's deleter when it lets go of the
/// tensor: in any thread (one of its own), at any time (also while the interpreter finalizes).
/// A deleter that takes the GIL there is ended by CPython before 3.14 with `pthread_exit`,
/// which aborts the process (see gil.hpp). So the deleter of these capsules only drops the C++
/// owner of the batch's memory; what that owner holds of Python (the loader's columns) is
/// released safely by gil.hpp. The capsule follows the DLPack protocol: `"dltensor"` (a
/// `DLManagedTensor`) or, when the consumer asks for 1.x, `"dltensor_versioned"` (a
/// `DLManagedTensorVersioned`); a consumer renames it `"used_..."` and owns the tensor from
/// then on, else the capsule's destructor calls the deleter.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <stoke/data/dlpack_types.hpp>

namespace stoke_python {

namespace nb = nanobind;

namespace dlpack_abi {

// The DLPack ABI (dlpack.h, v1.1), beside nanobind's `dltensor` (its `DLTensor`).
struct ManagedTensor {
  nb::dlpack::dltensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor*);
};
struct PackVersion {
  std::uint32_t major;
  std::uint32_t minor;
};
struct ManagedTensorVersioned {
  PackVersion version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned*);
  std::uint64_t flags;
  nb::dlpack::dltensor dl_tensor;
};
inline constexpr PackVersion version{1, 1};
inline constexpr auto cpu = static_cast<std::int32_t>(stoke::dlpack::DeviceType::cpu);  ///< kDLCPU

}  // namespace dlpack_abi

namespace detail {

/// A managed tensor with what it points into: the owner of the memory and the shape.
template <class Managed>
struct Exported {
  Managed managed{};
  std::shared_ptr<const void> owner;
  std::vector<std::int64_t> shape;
};

/// Frees an exported tensor: drops the C++ owner only (no Python, any thread).
template <class Managed>
void delete_exported(Managed* managed) noexcept {
  delete static_cast<Exported<Managed>*>(managed->manager_ctx);
}

/// The capsule's destructor: the consumer did not take the tensor (the name is unchanged).
template <class Managed>
void delete_untaken(PyObject* capsule) noexcept {
  constexpr const char* name =
      std::is_same_v<Managed, dlpack_abi::ManagedTensor> ? "dltensor" : "dltensor_versioned";
  if (PyCapsule_IsValid(capsule, name) == 0) return;  // taken: "used_dltensor..."
  auto* managed = static_cast<Managed*>(PyCapsule_GetPointer(capsule, name));
  managed->deleter(managed);
}

}  // namespace detail

/// The DLPack capsule of `shape` elements of `dtype` at `data` in host memory (C-contiguous,
/// writable), kept alive by `owner`: versioned (DLPack 1.x) or the legacy one.
template <class Managed>
nb::object dlpack_capsule(std::shared_ptr<const void> owner, void* data,
                          const std::vector<std::size_t>& shape, nb::dlpack::dtype dtype) {
  auto exported = std::make_unique<detail::Exported<Managed>>();
  exported->owner = std::move(owner);
  exported->shape.assign(shape.begin(), shape.end());
  Managed& managed = exported->managed;
  managed.dl_tensor.data = data;
  managed.dl_tensor.device = {dlpack_abi::cpu, 0};
  managed.dl_tensor.ndim = static_cast<std::int32_t>(shape.size());
  managed.dl_tensor.dtype = dtype;
  managed.dl_tensor.shape = exported->shape.data();
  managed.dl_tensor.strides = nullptr;  // C-contiguous
  managed.dl_tensor.byte_offset = 0;
  managed.manager_ctx = exported.get();
  managed.deleter = &detail::delete_exported<Managed>;
  if constexpr (std::is_same_v<Managed, dlpack_abi::ManagedTensorVersioned>) {
    managed.version = dlpack_abi::version;
    managed.flags = 0;
  }
  constexpr const char* name =
      std::is_same_v<Managed, dlpack_abi::ManagedTensor> ? "dltensor" : "dltensor_versioned";
  PyObject* capsule = PyCapsule_New(&managed, name, &detail::delete_untaken<Managed>);
  if (capsule == nullptr) throw nb::python_error();
  exported.release();  // the capsule's (or, once taken, the consumer's)
  return nb::steal(capsule);
}

}  // namespace stoke_python
