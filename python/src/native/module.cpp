/// @file
/// `stoke_loader._native`: stoke's multithread loader over columns of rows, for Python.
///
/// Lifetimes and the GIL:
/// - a column holds a reference to its NumPy array; nanobind drops it with the GIL taken in
///   whatever thread lets go last (a worker thread, possibly);
/// - so every object here that may join worker threads (a loader, an epoch's iterator) is
///   destroyed with the GIL released: a worker that drops the last reference to an array can
///   then take it, instead of waiting forever on a thread that joins it;
/// - batches are made, and waited for, with the GIL released;
/// - a batch's arrays share its buffer through a capsule; the buffer goes back to stoke's pool
///   when the batch and the last array (or DLPack consumer) over it are gone.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <stoke/core/error.hpp>
#include <stoke/cpu/backend.hpp>
#include <stoke/data/batch.hpp>
#include <stoke/data/batch_range.hpp>
#include <stoke/data/builder.hpp>
#include <stoke/data/multithread_loader.hpp>
#include <stoke/data/split.hpp>
#include <stoke/data/state.hpp>

#include "batch_array.hpp"
#include "bind_sources.hpp"
#include "gil.hpp"
#include "held_batches.hpp"
#include "python_epoch.hpp"
#include "python_loader.hpp"
#include "rows.hpp"
#include "scaled_column.hpp"
#include "sequences.hpp"

namespace stoke_python {
namespace {

using Loader = stoke::MultiThreadLoader<RowIndices, RowBatcher, stoke::cpu::Backend>;
using LoaderBatch = stoke::Batch<Rows>;
/// A batch handed to Python, counted against its loader's bound on held batches.
using Held = HeldBatch<LoaderBatch>;

/// One batch as Python sees it: a mapping of column names to arrays over the batch's buffer.
class PyBatch {
 public:
  PyBatch(LoaderBatch batch, std::shared_ptr<HeldBatches> count)
      : held_(std::make_shared<const Held>(std::move(batch), std::move(count))),
        batch_(&held_->batch) {}

  /// Column `name` as an array (DLPack producer, buffer protocol) sharing the batch's memory.
  [[nodiscard]] BatchArray get(const std::string& name) const {
    const auto& columns = batch_->data.table->columns();
    for (std::size_t k = 0; k < columns.size(); ++k) {
      if (columns[k]->name() == name) return array(k);
    }
    throw nb::key_error(name.c_str());
  }

  [[nodiscard]] BatchArray array(std::size_t k) const {
    const Column& column = *batch_->data.table->columns()[k];
    std::vector<std::size_t> shape{batch_->data.rows};
    shape.insert(shape.end(), column.row_shape().begin(), column.row_shape().end());
    // The array owns a reference to the batch: its buffer lives while any array does.
    return {held_, batch_->data.column_data(k), std::move(shape), column.dtype()};
  }

  [[nodiscard]] std::vector<std::string> keys() const {
    std::vector<std::string> names;
    for (const auto& column : batch_->data.table->columns()) names.push_back(column->name());
    return names;
  }
  [[nodiscard]] bool contains(const std::string& name) const {
    for (const auto& column : batch_->data.table->columns()) {
      if (column->name() == name) return true;
    }
    return false;
  }
  [[nodiscard]] std::size_t num_columns() const { return batch_->data.table->columns().size(); }

  [[nodiscard]] const LoaderBatch& batch() const noexcept { return *batch_; }
  /// The batch and its count in the held batches, shared with the arrays over it.
  [[nodiscard]] const std::shared_ptr<const Held>& held() const noexcept { return held_; }

  /// `Batch(epoch=0, step=3, size=64, padding=0, x=float32[64, 784], y=int64[64])`.
  [[nodiscard]] std::string repr() const {
    static constexpr const char* kinds[] = {"int",    "uint",    "float", "",
                                            "bfloat", "complex", "bool"};
    std::string out =
        "Batch(epoch=" + std::to_string(batch_->epoch) + ", step=" + std::to_string(batch_->step) +
        ", size=" + std::to_string(batch_->size()) + ", padding=" + std::to_string(batch_->padding);
    for (const auto& column : batch_->data.table->columns()) {
      const auto dtype = column->dtype();
      out += ", " + column->name() + "=";
      out += dtype.code < 7 ? kinds[dtype.code] : "?";
      if (dtype.code != 6) out += std::to_string(dtype.bits);
      out += "[" + std::to_string(batch_->size());
      for (const std::size_t extent : column->row_shape()) out += ", " + std::to_string(extent);
      out += "]";
    }
    return out + ", device=" + device_name(batch_->data.device) + ")";
  }

  /// The dataset indices of the rows, padding included.
  [[nodiscard]] nb::ndarray<nb::numpy, std::int64_t, nb::ndim<1>> indices() const {
    auto* values = new std::vector<std::int64_t>(batch_->indices.begin(), batch_->indices.end());
    nb::capsule owner(values,
                      [](void* p) noexcept { delete static_cast<std::vector<std::int64_t>*>(p); });
    return {values->data(), {values->size()}, owner};
  }

  /// True for the rows that are real samples, false for the trailing padding.
  [[nodiscard]] nb::ndarray<nb::numpy, bool, nb::ndim<1>> mask() const {
    auto* values = new std::vector<std::uint8_t>(batch_->size(), 1);
    for (std::size_t i = batch_->real_size(); i < values->size(); ++i) (*values)[i] = 0;
    nb::capsule owner(values,
                      [](void* p) noexcept { delete static_cast<std::vector<std::uint8_t>*>(p); });
    return {reinterpret_cast<bool*>(values->data()), {values->size()}, owner};
  }

 private:
  std::shared_ptr<const Held> held_;
  const LoaderBatch* batch_;  ///< `held_->batch`
};

/// The pool every loader of this process takes its batch buffers from, as C++ loaders that
/// share a pool do: a new loader's first batch then lands in memory an earlier loader already
/// touched (no page faults), and buffers outlive the loader that filled them either way. It
/// holds at most `BufferPool`'s capacity of free buffers; the rest are freed.
inline stoke::cpu::BufferPool batch_pool() {
  static const stoke::cpu::BufferPool pool{};
  return pool;
}

/// A loader over a table; copies made by `split` and `share` are loaders of their own.
class PyLoader : public PyLoaderOf<PyLoader, Loader, PyBatch> {
 public:
  using PyLoaderOf::PyLoaderOf;

  /// A loader over the table of `columns`.
  PyLoader(const std::vector<std::shared_ptr<Column>>& columns, std::size_t batch_size,
           bool shuffle, std::uint64_t seed, std::size_t num_workers, std::size_t queue_depth,
           const std::string& remainder, double batch_timeout, std::size_t max_held,
           bool shuffle_shards)
      : PyLoaderOf(max_held) {
    if (columns.empty()) throw stoke::UsageError("stoke_loader: a loader needs a column");
    const std::size_t rows = columns.front()->rows();
    std::vector<std::shared_ptr<const Column>> table;
    for (const auto& column : columns) {
      if (column->rows() != rows) {
        throw stoke::UsageError("stoke_loader: column '" + column->name() + "' has " +
                                std::to_string(column->rows()) + " rows, column '" +
                                columns.front()->name() + "' has " + std::to_string(rows));
      }
      for (const auto& other : table) {
        if (other->name() == column->name()) {
          throw stoke::UsageError("stoke_loader: two columns are named '" + column->name() + "'");
        }
      }
      table.push_back(released_safely(column));  // a worker may drop it last
    }
    const auto policy = stoke::remainder_named(remainder);
    if (!policy) {
      throw stoke::UsageError(
          "stoke_loader: remainder must be \"partial\", \"drop\" or \"pad\", "
          "not \"" +
          remainder + "\"");
    }
    auto shared = std::make_shared<const Table>(std::move(table), rows);
    if (shuffle_shards && !shared->sharded()) {
      throw stoke::UsageError(
          "stoke_loader: shuffle_shards needs a column read from shards (stoke_loader.shards, "
          "tar_shards)");
    }
    if (shuffle_shards && !shared->shard_mismatch().empty()) {
      throw stoke::UsageError(shared->shard_mismatch() + ": shuffle_shards needs one sharding");
    }
    RowBatcher batcher{shared, batch_pool()};
    stoke::DataLoaderBuilder<stoke::cpu::Backend, RowBatcher> builder(std::move(batcher));
    builder.batch_size(batch_size)
        .num_workers(num_workers)
        .queue_depth(queue_depth)
        .remainder(*policy);
    builder.seed(seed);
    if (shuffle_shards) {
      builder.shuffle_shards(seed);
    } else if (shuffle) {
      builder.shuffle(seed);
    }
    if (batch_timeout > 0) {
      const auto ms = static_cast<std::int64_t>(batch_timeout * 1000.0 + 0.5);
      builder.batch_timeout(std::chrono::milliseconds(ms < 1 ? 1 : ms));
    }
    emplace_loader(builder.build(RowIndices{rows, shared}));
  }
};

/// Python exception types, one per stoke error, made when the module loads.
struct Errors {
  PyObject* base = nullptr;
  PyObject* usage = nullptr;
  PyObject* state = nullptr;
  PyObject* input = nullptr;
  PyObject* data = nullptr;
  PyObject* timeout = nullptr;
  PyObject* held = nullptr;
};
Errors errors;

PyObject* new_error(nb::module_& m, const char* name, const char* doc, PyObject* bases) {
  const std::string qualified = std::string("stoke_loader.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  Py_DECREF(bases);
  if (type == nullptr) throw nb::python_error();
  m.attr(name) = nb::handle(type);
  return type;
}

void define_errors(nb::module_& m) {
  errors.base = new_error(m, "StokeError", "Base of every error stoke raises.",
                          PyTuple_Pack(1, PyExc_Exception));
  errors.usage =
      new_error(m, "UsageError", "Misuse of the API: an argument that breaks a call's contract.",
                PyTuple_Pack(2, errors.base, PyExc_ValueError));
  errors.state = new_error(m, "StateError",
                           "A call made in a state that does not allow it (an epoch already "
                           "begun, an iterator a later epoch replaced).",
                           PyTuple_Pack(2, errors.usage, PyExc_RuntimeError));
  errors.input = new_error(m, "InputError",
                           "Bad input: a file, record, value or loader state that cannot be used.",
                           PyTuple_Pack(2, errors.base, PyExc_ValueError));
  errors.data = new_error(m, "DataError",
                          "A sample failed on a worker thread; the message names the dataset "
                          "index, epoch, step, worker and device.",
                          PyTuple_Pack(2, errors.base, PyExc_RuntimeError));
  errors.timeout = new_error(m, "BatchTimeoutError",
                             "A batch not ready within the loader's batch_timeout; the message "
                             "names the stuck worker and the dataset index.",
                             PyTuple_Pack(2, errors.base, PyExc_TimeoutError));
  errors.held = new_error(m, "HeldBatchesError",
                          "The consumer asked for a batch while it held max_held_batches of the "
                          "loader's batches (or arrays over them); the message says how to raise "
                          "the bound.",
                          PyTuple_Pack(2, errors.base, PyExc_RuntimeError));
  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    try {
      std::rethrow_exception(error);
    } catch (const HeldBatchesError& e) {
      PyErr_SetString(errors.held, e.what());
    } catch (const stoke::DataError& e) {
      PyErr_SetString(errors.data, e.what());
    } catch (const stoke::TimeoutError& e) {
      PyErr_SetString(errors.timeout, e.what());
    } catch (const stoke::StateError& e) {
      PyErr_SetString(errors.state, e.what());
    } catch (const stoke::UsageError& e) {
      PyErr_SetString(errors.usage, e.what());
    } catch (const stoke::InputError& e) {
      PyErr_SetString(errors.input, e.what());
    } catch (const stoke::Error& e) {
      PyErr_SetString(errors.base, e.what());
    }
  });
}

nb::dlpack::dtype make_dtype(std::uint8_t code, std::uint8_t bits) {
  return nb::dlpack::dtype{code, bits, 1};
}

}  // namespace
}  // namespace stoke_python

NB_MODULE(_native, m) {
  using namespace stoke_python;
  m.doc() = "stoke's loaders, natively; use the stoke_loader package.";
  define_errors(m);

  nb::class_<Column>(m, "Column")
      .def_prop_ro("name", &Column::name)
      .def_prop_ro("rows", &Column::rows)
      .def_prop_ro("row_shape", &Column::row_shape)
      .def_prop_ro("row_bytes", &Column::row_bytes);
  nb::class_<ArrayColumn, Column>(m, "ArrayColumn")
      .def(nb::init<std::string, ArrayColumn::Array>(), nb::arg("name"), nb::arg("array"));
  nb::class_<RecordColumn, Column>(m, "RecordColumn")
      .def(
          "__init__",
          [](RecordColumn* self, std::string name, const std::string& path, std::uint8_t code,
             std::uint8_t bits, std::vector<std::size_t> shape, bool read) {
            new (self) RecordColumn(std::move(name), std::filesystem::path(path),
                                    make_dtype(code, bits), std::move(shape),
                                    read ? stoke::FileAccess::read : stoke::FileAccess::map);
          },
          nb::arg("name"), nb::arg("path"), nb::arg("code"), nb::arg("bits"), nb::arg("shape"),
          nb::arg("read"));
  m.def(
      "batch_buffers_allocated", [] { return batch_pool().allocations(); },
      "Batch buffers the loaders' shared pool has allocated so far (not recycled).");
  nb::class_<ScaledColumn, Column>(m, "ScaledColumn")
      .def(nb::init<std::string, std::shared_ptr<Column>, float, float>(), nb::arg("name"),
           nb::arg("source"), nb::arg("scale"), nb::arg("offset"));
  bind_sources(m);
  bind_sequences(m);

  static PyType_Slot array_slots[] = {
      {Py_bf_getbuffer, reinterpret_cast<void*>(&BatchArray::get_buffer)}, {0, nullptr}};
  nb::class_<BatchArray>(m, "Array",
                         "A column of a batch, over the batch's memory: a DLPack producer "
                         "(np.from_dlpack, torch.from_dlpack, jax.dlpack.from_dlpack take it "
                         "without a copy) and a buffer (np.asarray, memoryview).",
                         nb::type_slots(array_slots))
      .def("__dlpack__", &BatchArray::dlpack, nb::arg("stream") = nb::none(), nb::kw_only(),
           nb::arg("max_version") = nb::none(), nb::arg("dl_device") = nb::none(),
           nb::arg("copy") = nb::none(),
           "The DLPack capsule (1.x when max_version asks for it, else legacy). stream must be "
           "None or -1: a CPU array has no stream.")
      .def("__dlpack_device__", [](const BatchArray&) { return nb::make_tuple(1, 0); })
      .def_prop_ro("shape", &BatchArray::shape)
      .def_prop_ro("nbytes", &BatchArray::nbytes)
      .def_prop_ro("address", &BatchArray::address, "The address of the first byte.")
      .def("__repr__", [](const BatchArray& a) {
        return "stoke_loader.Array(shape=" + nb::cast<std::string>(nb::repr(a.shape())) + ")";
      });

  nb::class_<PyBatch>(m, "Batch",
                      "One batch: a mapping of column names to arrays that share the batch's "
                      "memory (DLPack producers, zero copy into NumPy, PyTorch, JAX).")
      .def("__getitem__", &PyBatch::get, nb::arg("name"))
      .def("__contains__", &PyBatch::contains, nb::arg("name"))
      .def("__len__", &PyBatch::num_columns)
      .def("__iter__", [](const PyBatch& b) { return nb::iter(nb::cast(b.keys())); })
      .def("keys", &PyBatch::keys)
      .def("values",
           [](const PyBatch& b) {
             std::vector<BatchArray> out;
             for (std::size_t k = 0; k < b.num_columns(); ++k) out.push_back(b.array(k));
             return out;
           })
      .def("items",
           [](const PyBatch& b) {
             nb::list out;
             const auto names = b.keys();
             for (std::size_t k = 0; k < names.size(); ++k) {
               out.append(nb::make_tuple(names[k], b.array(k)));
             }
             return out;
           })
      .def(
          "get",
          [](const PyBatch& b, const std::string& name, nb::object fallback) -> nb::object {
            if (!b.contains(name)) return fallback;
            return nb::cast(b.get(name));
          },
          nb::arg("name"), nb::arg("default") = nb::none())
      .def("__repr__", &PyBatch::repr)
      .def_prop_ro("epoch", [](const PyBatch& b) { return b.batch().epoch; })
      .def_prop_ro("step", [](const PyBatch& b) { return b.batch().step; })
      .def_prop_ro("padding", [](const PyBatch& b) { return b.batch().padding; })
      .def_prop_ro("size", [](const PyBatch& b) { return b.batch().size(); })
      .def_prop_ro("real_size", [](const PyBatch& b) { return b.batch().real_size(); })
      .def_prop_ro("device", [](const PyBatch& b) { return device_name(b.batch().data.device); })
      .def_prop_ro("indices", &PyBatch::indices, nb::rv_policy::automatic)
      .def_prop_ro("mask", &PyBatch::mask, nb::rv_policy::automatic);

  nb::class_<PyLoader::Epoch>(m, "Epoch", "One epoch's batches, in order.")
      .def("__iter__", [](nb::handle self) { return self; })
      .def("__next__", &PyLoader::Epoch::next);

  nb::class_<PyLoader> loader(m, "Loader");
  loader.def(nb::init<const std::vector<std::shared_ptr<Column>>&, std::size_t, bool, std::uint64_t,
                      std::size_t, std::size_t, const std::string&, double, std::size_t, bool>(),
             nb::arg("columns"), nb::arg("batch_size"), nb::arg("shuffle"), nb::arg("seed"),
             nb::arg("num_workers"), nb::arg("queue_depth"), nb::arg("remainder"),
             nb::arg("batch_timeout"), nb::arg("max_held"), nb::arg("shuffle_shards"));
  bind_loader_methods(loader);
  loader.def("order", [](const PyLoader& l, std::size_t epoch) {
    const auto order = l.loader().order(epoch);
    std::vector<std::int64_t> out(l.loader().dataset().size());
    for (std::size_t p = 0; p < out.size(); ++p) out[p] = static_cast<std::int64_t>(order(p));
    return out;
  });
}
