#pragma once
/// @file
/// `BatchArray`: one column of a batch as Python sees it, over the batch's buffer: a DLPack
/// producer (`__dlpack__`, DLPack 1.x and the legacy capsule, and `__dlpack_device__`) and a
/// buffer-protocol exporter, without a copy. Its `__dlpack__` checks the `stream` argument as
/// the DLPack specification asks of a CPU array: `None` (or -1, "no synchronisation").

#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "dlpack_capsule.hpp"

namespace stoke_python {

namespace nb = nanobind;

/// A column of a batch: `shape` elements of `dtype` at `data`, kept alive by `owner`.
class BatchArray {
 public:
  /// The array at `data`, whose memory `owner` keeps alive.
  BatchArray(std::shared_ptr<const void> owner, void* data, std::vector<std::size_t> shape,
             nb::dlpack::dtype dtype)
      : owner_(std::move(owner)), data_(data), shape_(std::move(shape)), dtype_(dtype) {
    const auto item = static_cast<Py_ssize_t>(dtype_.bits / 8);
    buffer_shape_.assign(shape_.begin(), shape_.end());
    buffer_strides_.resize(shape_.size());
    Py_ssize_t stride = item;
    for (std::size_t d = shape_.size(); d-- > 0;) {
      buffer_strides_[d] = stride;
      stride *= static_cast<Py_ssize_t>(shape_[d]);
    }
    bytes_ = stride;
  }

  /// The DLPack capsule of the array (`__dlpack__`). `stream` must be `None` or -1 for a CPU
  /// array (else `BufferError`); the other arguments are the DLPack 1.x ones.
  [[nodiscard]] nb::object dlpack(nb::handle stream, nb::handle max_version, nb::handle dl_device,
                                  nb::handle copy) const {
    if (!stream.is_none()) {
      const bool minus_one = PyLong_Check(stream.ptr()) && PyLong_AsLong(stream.ptr()) == -1;
      if (PyErr_Occurred() != nullptr) PyErr_Clear();
      if (!minus_one) {
        const std::string given = nb::cast<std::string>(nb::repr(stream));
        throw nb::buffer_error(
            ("stoke_loader: __dlpack__(stream=" + given +
             ") for a CPU batch: CPU memory has no stream to order on; pass stream=None "
             "(or -1). (torch.from_dlpack and np.from_dlpack do so for a CPU array.)")
                .c_str());
      }
    }
    if (!copy.is_none() && nb::cast<bool>(copy)) {
      // A copy asked for: nanobind makes it, in memory of its own (not the batch's).
      nb::kwargs kwargs;
      if (!max_version.is_none()) kwargs["max_version"] = max_version;
      if (!dl_device.is_none()) kwargs["dl_device"] = dl_device;
      kwargs["copy"] = copy;
      return ndarray().attr("__dlpack__")(**kwargs);
    }
    if (!dl_device.is_none()) {
      const auto device = nb::cast<nb::tuple>(dl_device);
      if (device.size() != 2 || nb::cast<int>(device[0]) != dlpack_abi::cpu ||
          nb::cast<int>(device[1]) != 0) {
        throw nb::buffer_error(
            ("stoke_loader: __dlpack__(dl_device=" + nb::cast<std::string>(nb::repr(dl_device)) +
             ") for a CPU batch: it lives on (1, 0), the CPU")
                .c_str());
      }
    }
    // The batch's own memory, in a capsule whose deleter never takes the GIL (a consumer may
    // free the tensor in a thread of its own, also at exit: dlpack_capsule.hpp).
    const bool versioned =
        !max_version.is_none() && nb::cast<int>(nb::cast<nb::tuple>(max_version)[0]) >= 1;
    if (versioned) {
      return dlpack_capsule<dlpack_abi::ManagedTensorVersioned>(owner_, data_, shape_, dtype_);
    }
    return dlpack_capsule<dlpack_abi::ManagedTensor>(owner_, data_, shape_, dtype_);
  }

  /// The array as nanobind's DLPack-producing array, sharing the memory.
  [[nodiscard]] nb::object ndarray() const {
    auto* owner = new std::shared_ptr<const void>(owner_);
    nb::capsule capsule(
        owner, [](void* p) noexcept { delete static_cast<std::shared_ptr<const void>*>(p); });
    return nb::cast(nb::ndarray<nb::array_api>(data_, shape_.size(), shape_.data(), capsule,
                                               nullptr, dtype_, nb::device::cpu::value));
  }

  /// The shape.
  [[nodiscard]] nb::tuple shape() const {
    nb::list out;
    for (const std::size_t extent : shape_) out.append(extent);
    return nb::tuple(out);
  }
  /// The first byte (for checks of where the memory is).
  [[nodiscard]] std::uintptr_t address() const noexcept {
    return reinterpret_cast<std::uintptr_t>(data_);
  }
  /// Bytes in all.
  [[nodiscard]] std::size_t nbytes() const noexcept { return static_cast<std::size_t>(bytes_); }

  /// `bf_getbuffer`: the array, writable and C-contiguous, as a buffer.
  static int get_buffer(PyObject* self, Py_buffer* view, int /*flags*/) {
    const BatchArray* array = nb::inst_ptr<BatchArray>(self);
    const char* format = array->format();
    if (format == nullptr) {
      PyErr_SetString(PyExc_BufferError,
                      "stoke_loader: this element type has no buffer-protocol format; "
                      "use __dlpack__ (np.from_dlpack, torch.from_dlpack)");
      view->obj = nullptr;
      return -1;
    }
    view->buf = array->data_;
    view->obj = Py_NewRef(self);
    view->len = array->bytes_;
    view->readonly = 0;
    view->itemsize = array->dtype_.bits / 8;
    view->format = const_cast<char*>(format);
    view->ndim = static_cast<int>(array->shape_.size());
    view->shape = const_cast<Py_ssize_t*>(array->buffer_shape_.data());
    view->strides = const_cast<Py_ssize_t*>(array->buffer_strides_.data());
    view->suboffsets = nullptr;
    view->internal = nullptr;
    return 0;
  }

 private:
  /// The struct-module format of the element type, or null.
  [[nodiscard]] const char* format() const noexcept {
    const auto code = static_cast<nb::dlpack::dtype_code>(dtype_.code);
    const int bits = dtype_.bits;
    using C = nb::dlpack::dtype_code;
    if (code == C::Bool && bits == 8) return "?";
    if (code == C::Int) return bits == 8 ? "b" : bits == 16 ? "h" : bits == 32 ? "i" : "q";
    if (code == C::UInt) return bits == 8 ? "B" : bits == 16 ? "H" : bits == 32 ? "I" : "Q";
    if (code == C::Float) return bits == 16 ? "e" : bits == 32 ? "f" : bits == 64 ? "d" : nullptr;
    if (code == C::Complex) return bits == 64 ? "Zf" : bits == 128 ? "Zd" : nullptr;
    return nullptr;
  }

  std::shared_ptr<const void> owner_;
  void* data_;
  std::vector<std::size_t> shape_;
  nb::dlpack::dtype dtype_;
  std::vector<Py_ssize_t> buffer_shape_;
  std::vector<Py_ssize_t> buffer_strides_;
  Py_ssize_t bytes_ = 0;
};

}  // namespace stoke_python
