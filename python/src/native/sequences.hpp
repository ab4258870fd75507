#pragma once
/// @file
/// Sequences in `stoke_loader` (#37): `SequenceLoader`, stoke's `MultiThreadLoader` over a
/// `TokenSource` (token stores read in place or through a byte store) with a `PlannedBatcher`
/// (padded, packed by concatenate-then-split, first-fit or best-fit, or bucketed under a token
/// budget; of one source or of a mixture of several), and its batches, whose columns (tokens,
/// positions, segment ids, `cu_seqlens`, loss mask, mask, documents) are arrays over the batch's
/// memory (DLPack producers). `bind_sequences` adds them to the module.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <stoke/core/error.hpp>
#include <stoke/cpu/backend.hpp>
#include <stoke/data/batch.hpp>
#include <stoke/data/multithread_loader.hpp>
#include <stoke/data/split.hpp>
#include <stoke/data/state.hpp>
#include <stoke/sequences/packed_batch.hpp>
#include <stoke/sequences/planned_batcher.hpp>

#include "batch_array.hpp"
#include "held_batches.hpp"
#include "mixture_planner.hpp"
#include "plan_of.hpp"
#include "python_loader.hpp"
#include "sequence_planners.hpp"
#include "stored_token_stores.hpp"
#include "token_source.hpp"

namespace stoke_python {

/// The loader of every kind of sequence plan.
using SequenceLoader =
    stoke::MultiThreadLoader<TokenSource, stoke::PlannedBatcher<AnyPlanner>, stoke::cpu::Backend>;

/// A planned batch handed to Python, with its `mask` (1 on real tokens) made from its segments.
struct SequenceBatch {
  /// `batch`, and its mask.
  explicit SequenceBatch(stoke::Batch<stoke::PackedBatch> batch_) : batch(std::move(batch_)) {
    mask.reserve(batch.data.segment_ids.size());
    for (const std::int32_t segment : batch.data.segment_ids) mask.push_back(segment != 0 ? 1 : 0);
  }

  stoke::Batch<stoke::PackedBatch> batch;  ///< the loader's batch
  std::vector<std::uint8_t> mask;          ///< rows x width; 1 for a real token, 0 for padding
};

/// One planned batch as Python sees it: a mapping of its columns' names to arrays over it.
class PySequenceBatch {
 public:
  /// `batch`, counted in `count`.
  PySequenceBatch(stoke::Batch<stoke::PackedBatch> batch, std::shared_ptr<HeldBatches> count)
      : held_(std::make_shared<const HeldBatch<SequenceBatch>>(SequenceBatch(std::move(batch)),
                                                               std::move(count))) {}

  /// The names of the columns, in order.
  static const std::vector<std::string>& names() {
    static const std::vector<std::string> all{"tokens",    "positions", "segment_ids", "cu_seqlens",
                                              "loss_mask", "mask",      "documents"};
    return all;
  }

  /// Column `name` as an array over the batch (`KeyError` when there is none).
  [[nodiscard]] BatchArray get(const std::string& name) const {
    const stoke::PackedBatch& data = held_->batch.batch.data;
    const std::vector<std::size_t> grid{data.rows, data.width};
    const auto int32 = nb::dtype<std::int32_t>();
    const auto boolean = nb::dtype<bool>();
    if (name == "tokens") return view(data.tokens.data(), grid, int32);
    if (name == "positions") return view(data.positions.data(), grid, int32);
    if (name == "segment_ids") return view(data.segment_ids.data(), grid, int32);
    if (name == "cu_seqlens") return view(data.cu_seqlens.data(), {data.cu_seqlens.size()}, int32);
    if (name == "loss_mask") return view(data.loss_mask.data(), grid, boolean);
    if (name == "mask") return view(held_->batch.mask.data(), grid, boolean);
    if (name == "documents") {
      static_assert(sizeof(std::size_t) == sizeof(std::int64_t));
      return view(data.documents.data(), {data.documents.size()}, nb::dtype<std::int64_t>());
    }
    throw nb::key_error(name.c_str());
  }

  /// The loader's batch.
  [[nodiscard]] const stoke::Batch<stoke::PackedBatch>& batch() const noexcept {
    return held_->batch.batch;
  }

  /// `SequenceBatch(epoch=0, step=3, rows=8, width=129, segments=12, padding=0)`.
  [[nodiscard]] std::string repr() const {
    const auto& b = batch();
    return "SequenceBatch(epoch=" + std::to_string(b.epoch) + ", step=" + std::to_string(b.step) +
           ", rows=" + std::to_string(b.data.rows) + ", width=" + std::to_string(b.data.width) +
           ", segments=" + std::to_string(b.data.documents.size()) +
           ", padding=" + std::to_string(b.padding) + ")";
  }

 private:
  [[nodiscard]] BatchArray view(const void* data, std::vector<std::size_t> shape,
                                nb::dlpack::dtype dtype) const {
    // The array owns a reference to the batch: its vectors live while any array does.
    return {held_, const_cast<void*>(data), std::move(shape), dtype};
  }

  std::shared_ptr<const HeldBatch<SequenceBatch>> held_;
};

/// A sequence loader; copies made by `split` and `share` are loaders of their own.
class PySequenceLoader : public PyLoaderOf<PySequenceLoader, SequenceLoader, PySequenceBatch> {
 public:
  using PyLoaderOf::PyLoaderOf;

  /// A loader of `planner`'s batches of `source`, `pad_id` in padding slots; `remainder`
  /// ("pad" or "drop") evens out shares. Stores of `source` read through a byte store begin
  /// fetching their `.bin` objects ahead (`TokenSource::read_ahead`).
  PySequenceLoader(const TokenSource& source, AnyPlanner planner, std::int32_t pad_id,
                   std::size_t num_workers, std::size_t queue_depth, const std::string& remainder,
                   double batch_timeout, std::size_t max_held)
      : PyLoaderOf(max_held) {
    const auto policy = stoke::remainder_named(remainder);
    if (!policy || *policy == stoke::Remainder::partial) {
      throw stoke::UsageError(
          "stoke_loader: a sequence loader's remainder is \"pad\" or \"drop\", not \"" + remainder +
          "\"");
    }
    stoke::LoaderOptions options;
    options.remainder = *policy;
    options.num_workers = num_workers;
    options.queue_depth = queue_depth;
    if (batch_timeout > 0) {
      const auto ms = static_cast<std::int64_t>(batch_timeout * 1000.0 + 0.5);
      options.batch_timeout = std::chrono::milliseconds(ms < 1 ? 1 : ms);
    }
    source.read_ahead();
    emplace_loader(source, stoke::PlannedBatcher<AnyPlanner>(std::move(planner), pad_id), options);
  }
};

/// The planner of `kind` ("concat", "first_fit", "best_fit", "bucket", "pad") over `source`'s
/// lengths (see `plan_of`).
inline AnyPlanner make_planner(const TokenSource& source, const std::string& kind,
                               std::size_t sequence_length, std::size_t rows, bool shifted,
                               std::size_t window, bool shuffle, std::uint64_t seed,
                               std::size_t budget, bool attention_cost, std::size_t multiple,
                               std::size_t buckets, bool split_oversize) {
  return plan_of(source.lengths(),
                 PlanParameters{kind, sequence_length, rows, shifted, window, shuffle, seed, budget,
                                attention_cost, multiple, buckets, split_oversize});
}

/// Adds `TokenSource`, `SequenceBatch`, `SequenceEpoch` and `SequenceLoader` to `m`.
inline void bind_sequences(nb::module_& m) {
  nb::class_<TokenSource>(m, "TokenSource",
                          "Token stores read in place or through a byte store, as one source.")
      .def(
          "__init__",
          [](TokenSource* self, const std::vector<std::string>& prefixes, std::size_t resident,
             std::size_t io_threads) {
            std::vector<std::filesystem::path> paths(prefixes.begin(), prefixes.end());
            new (self)
                TokenSource(std::move(paths), {.resident = resident, .io_threads = io_threads});
          },
          nb::arg("prefixes"), nb::arg("resident") = 2, nb::arg("io_threads") = 1)
      .def("__len__", &TokenSource::size)
      .def_prop_ro("prefixes", &TokenSource::names)
      .def_prop_ro("token_count", &TokenSource::token_count)
      .def_prop_ro("store_count", &TokenSource::store_count)
      .def_prop_ro("dtype", &TokenSource::dtype)
      .def("lengths",
           [](const TokenSource& s) {
             const stoke::DocumentLengths lengths = s.lengths();
             std::vector<std::int64_t> out(lengths.size());
             for (std::size_t i = 0; i < out.size(); ++i)
               out[i] = static_cast<std::int64_t>(lengths(i));
             return out;
           })
      .def("get", [](const TokenSource& s, std::size_t i) {
        const SequenceTokens sequence = s.get(i);  // owns what the span views
        const std::span<const std::int32_t> tokens = sequence;
        return std::vector<std::int32_t>(tokens.begin(), tokens.end());
      });

  nb::class_<PySequenceBatch>(m, "SequenceBatch",
                              "One planned batch: its columns are arrays over its memory.")
      .def("__getitem__", &PySequenceBatch::get, nb::arg("name"))
      .def("__contains__",
           [](const PySequenceBatch&, const std::string& name) {
             const auto& all = PySequenceBatch::names();
             return std::find(all.begin(), all.end(), name) != all.end();
           })
      .def("keys", [](const PySequenceBatch&) { return PySequenceBatch::names(); })
      .def("__len__", [](const PySequenceBatch&) { return PySequenceBatch::names().size(); })
      .def("__iter__",
           [](const PySequenceBatch&) { return nb::iter(nb::cast(PySequenceBatch::names())); })
      .def("__repr__", &PySequenceBatch::repr)
      .def_prop_ro("epoch", [](const PySequenceBatch& b) { return b.batch().epoch; })
      .def_prop_ro("step", [](const PySequenceBatch& b) { return b.batch().step; })
      .def_prop_ro("padding", [](const PySequenceBatch& b) { return b.batch().padding; })
      .def_prop_ro("rows", [](const PySequenceBatch& b) { return b.batch().data.rows; })
      .def_prop_ro("width", [](const PySequenceBatch& b) { return b.batch().data.width; })
      .def_prop_ro("plan_index", [](const PySequenceBatch& b) {
        return b.batch().indices.empty() ? std::size_t{0} : b.batch().indices.front();
      });

  nb::class_<PySequenceLoader::Epoch>(m, "SequenceEpoch", "One epoch's planned batches, in order.")
      .def("__iter__", [](nb::handle self) { return self; })
      .def("__next__", &PySequenceLoader::Epoch::next);

  m.def("sequence_planner", &make_planner, nb::arg("source"), nb::arg("kind"),
        nb::arg("sequence_length"), nb::arg("rows"), nb::arg("shifted"), nb::arg("window"),
        nb::arg("shuffle"), nb::arg("seed"), nb::arg("budget"), nb::arg("attention_cost"),
        nb::arg("multiple"), nb::arg("buckets"), nb::arg("split_oversize"));
  m.def("stored_token_source", &stored_token_source, nb::arg("urls"), nb::arg("resident"),
        nb::arg("io_threads"), nb::arg("cache"), nb::arg("cache_bytes"),
        "The token stores that URLs name, read through stoke's byte stores.");
  m.def(
      "concat_token_sources",
      [](std::vector<TokenSource> parts) { return TokenSource(std::move(parts)); },
      nb::arg("parts"), "The sequences of several token sources, one after another.");
  m.def(
      "mixture_planner",
      [](const std::vector<TokenSource>& sources, const std::vector<std::uint64_t>& weights,
         const std::string& unit, const std::string& exhaustion, std::size_t samples_per_epoch,
         bool mixture_shuffle, std::uint64_t mixture_seed,
         const std::vector<SchedulePhase>& schedule, const std::string& kind,
         std::size_t sequence_length, std::size_t rows, bool shifted, std::size_t window,
         std::uint64_t seed, std::size_t budget, bool attention_cost, std::size_t multiple,
         std::size_t buckets, bool split_oversize) {
        return make_mixture_planner(
            sources, weights, unit, exhaustion, samples_per_epoch, mixture_shuffle, mixture_seed,
            schedule,
            PlanParameters{kind, sequence_length, rows, shifted, window, false, seed, budget,
                           attention_cost, multiple, buckets, split_oversize});
      },
      nb::arg("sources"), nb::arg("weights"), nb::arg("unit"), nb::arg("exhaustion"),
      nb::arg("samples_per_epoch"), nb::arg("mixture_shuffle"), nb::arg("mixture_seed"),
      nb::arg("schedule"), nb::arg("kind"), nb::arg("sequence_length"), nb::arg("rows"),
      nb::arg("shifted"), nb::arg("window"), nb::arg("seed"), nb::arg("budget"),
      nb::arg("attention_cost"), nb::arg("multiple"), nb::arg("buckets"),
      nb::arg("split_oversize"));
  nb::class_<AnyPlanner>(m, "SequencePlanner", "A sequence plan's planner, of any kind.")
      .def_prop_ro("fingerprint", &AnyPlanner::fingerprint);

  nb::class_<PySequenceLoader> loader(m, "SequenceLoader");
  loader.def(nb::init<const TokenSource&, AnyPlanner, std::int32_t, std::size_t, std::size_t,
                      const std::string&, double, std::size_t>(),
             nb::arg("source"), nb::arg("planner"), nb::arg("pad_id"), nb::arg("num_workers"),
             nb::arg("queue_depth"), nb::arg("remainder"), nb::arg("batch_timeout"),
             nb::arg("max_held"));
  bind_loader_methods(loader);
}

}  // namespace stoke_python
