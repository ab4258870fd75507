#pragma once
/// @file
/// `PyLoaderOf`: what every Python loader of the package is around its C++ loader (the epochs
/// handed to Python, `split`, `share`, `close`, state and restore, the bound on held batches),
/// and `bind_loader_methods`, the Python methods they all have.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <stoke/cpu/backend.hpp>
#include <stoke/data/split.hpp>
#include <stoke/data/state.hpp>

#include "gil.hpp"
#include "held_batches.hpp"
#include "python_epoch.hpp"

namespace stoke_python {

/// A Python loader `Derived` around a C++ loader `L` whose batches Python sees as `PyB`; copies
/// made by `split` and `share` are loaders of their own (`Derived(L, max_held)`).
template <class Derived, class L, class PyB>
class PyLoaderOf {
 public:
  /// One epoch of the loader, as Python iterates it.
  using Epoch = PyEpochOf<typename L::batch_type, PyB>;

  /// A loader of its own (a share or a split's part) with the bound `max_held`.
  PyLoaderOf(L loader, std::size_t max_held) : PyLoaderOf(max_held) {
    loader_.emplace(std::move(loader));
  }
  PyLoaderOf(const PyLoaderOf&) = delete;
  PyLoaderOf& operator=(const PyLoaderOf&) = delete;
  ~PyLoaderOf() {
    without_gil([this] { loader_.reset(); });
  }

  /// The next epoch's batches; advances the epoch. Like every call that changes the loader,
  /// it holds the GIL, which keeps such calls from several threads apart (it waits for no
  /// batch: the workers begin the epoch, the consumer waits in `Epoch::next`).
  std::unique_ptr<Epoch> iter() { return std::make_unique<Epoch>(loader_->iter(), held_); }

  /// One loader per CPU device of `devices`, each its share of every epoch.
  std::vector<std::unique_ptr<Derived>> split(const std::vector<std::size_t>& devices) const {
    std::vector<stoke::cpu::Device> targets;
    for (const std::size_t index : devices) targets.push_back(stoke::cpu::Device{index});
    std::vector<std::unique_ptr<Derived>> out;
    for (L& part : stoke::split(*loader_, targets)) {
      out.push_back(std::make_unique<Derived>(std::move(part), held_->max));
    }
    return out;
  }

  /// Share `index` of `count` (one rank's loader).
  std::unique_ptr<Derived> share(std::size_t count, std::size_t index) const {
    return std::make_unique<Derived>(share_of(*loader_, count, index), held_->max);
  }

  /// Stops the loader's worker threads now and joins them; an epoch still open raises
  /// `StateError` at its next batch; the next `iter()` starts new workers.
  void close() {
    without_gil([this] { loader_->close(); });
  }

  /// The loader state's JSON.
  [[nodiscard]] std::string state_json() const { return stoke::to_json(loader_->state()).dump(); }
  /// Resumes from the loader state JSON `text`.
  void restore_json(const std::string& text) { loader_->restore(stoke::parse_loader_state(text)); }

  /// The C++ loader.
  [[nodiscard]] const L& loader() const { return *loader_; }
  /// The C++ loader.
  [[nodiscard]] L& loader() { return *loader_; }
  /// Batches of this loader the consumer holds now.
  [[nodiscard]] std::size_t held() const noexcept { return held_->held.load(); }
  /// The bound on them (0: none).
  [[nodiscard]] std::size_t max_held() const noexcept { return held_->max; }

 protected:
  /// No loader yet (the derived constructor makes it: `emplace_loader`), the bound `max_held`.
  explicit PyLoaderOf(std::size_t max_held) : held_(std::make_shared<HeldBatches>()) {
    held_->max = max_held;
  }
  /// Makes the loader.
  template <class... A>
  void emplace_loader(A&&... arguments) {
    loader_.emplace(std::forward<A>(arguments)...);
  }

 private:
  std::shared_ptr<HeldBatches> held_;
  std::optional<L> loader_;
};

/// Binds the methods every Python loader `T` (a `PyLoaderOf`) has.
template <class T>
void bind_loader_methods(nb::class_<T>& c) {
  c.def_prop_ro("held", &T::held)
      .def_prop_ro("max_held", &T::max_held)
      .def("iter", &T::iter)
      .def("close", &T::close)
      .def("split", &T::split, nb::arg("devices"))
      .def("share", &T::share, nb::arg("count"), nb::arg("index"))
      .def("state_json", &T::state_json)
      .def("restore_json", &T::restore_json, nb::arg("text"))
      .def_prop_ro("num_batches", [](const T& l) { return l.loader().num_batches(); })
      .def_prop_ro("num_items", [](const T& l) { return l.loader().num_items(); })
      .def_prop_ro("num_padded", [](const T& l) { return l.loader().num_padded(); })
      .def_prop_ro("num_dropped", [](const T& l) { return l.loader().num_dropped(); })
      .def_prop_ro("dataset_size", [](const T& l) { return l.loader().dataset().size(); })
      .def_prop_ro("epoch", [](const T& l) { return l.loader().epoch(); })
      .def("set_epoch", [](T& l, std::size_t epoch) { l.loader().set_epoch(epoch); })
      .def_prop_ro("device", [](const T& l) { return device_name(l.loader().device()); })
      .def("set_device",
           [](T& l, std::size_t index) { l.loader().set_device(stoke::cpu::Device{index}); });
}

}  // namespace stoke_python
