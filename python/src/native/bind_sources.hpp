#pragma once
/// @file
/// The bindings of `stoke_loader`'s file sources: `.npy` and `.npz` files as arrays viewing the
/// mapped file, shards of them (and of HDF5 files) as columns, record files named by URLs, HDF5
/// variables, image folders and WebDataset tar shards (local, or named by URLs).

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stoke/core/error.hpp>
#include <stoke/data/sources/npy.hpp>
#include <stoke/data/sources/npz.hpp>
#include <stoke/data/sources/sharded_arrays.hpp>
#include "array_files.hpp"
#include "rows.hpp"
#include "stored_shards.hpp"
#if defined(STOKE_PYTHON_IMAGES)
#include <stoke/images/augment.hpp>
#include <stoke/images/image_folder.hpp>
#include <stoke/images/tar_shards.hpp>

#include "image_columns.hpp"
#include "stored_tar_shards.hpp"
#endif
#if defined(STOKE_PYTHON_HDF5)
#include <stoke/data/sources/hdf5.hpp>

#include "hdf5_column.hpp"
#endif

namespace stoke_python {

#if defined(STOKE_PYTHON_IMAGES)
/// How images are read and augmented, as `image_source` takes it from Python.
struct ImageOptions {
  std::string crop = "resize";                           ///< "resize", "center" or "random"
  std::uint32_t height = 0;                              ///< output rows
  std::uint32_t width = 0;                               ///< output columns
  std::array<float, 2> scale{0.08F, 1.0F};               ///< random crop: area fraction
  std::array<float, 2> ratio{3.0F / 4.0F, 4.0F / 3.0F};  ///< random crop: aspect ratio
  float flip = 0.0F;                                     ///< horizontal flip probability
  std::array<float, 3> jitter{0.0F, 0.0F, 0.0F};         ///< brightness, contrast, saturation
  std::uint32_t channels = 3;                            ///< 1 or 3
  std::vector<float> mean;                               ///< per channel; empty: uint8 HWC output
  std::vector<float> std;                                ///< per channel
  bool reduced_decode = true;  ///< JPEG DCT scaling where it keeps the size
  bool region_decode = true;   ///< decode only the region the crop reads
};

/// The augmentation `options` describe (stoke's `Augmentation`, checked by stoke).
inline images::Augmentation augmentation_of(const ImageOptions& o) {
  images::Augmentation out = [&]() -> images::Augmentation {
    if (o.crop == "resize") return images::resize(o.height, o.width);
    if (o.crop == "center") return images::center_crop(o.height, o.width);
    if (o.crop == "random") return images::random_resized_crop(o.height, o.width, o.scale, o.ratio);
    throw stoke::UsageError(
        "stoke_loader: crop must be \"resize\", \"center\" or \"random\", not \"" + o.crop + "\"");
  }();
  if (o.flip > 0.0F) out = std::move(out) | images::horizontal_flip(o.flip);
  if (o.jitter[0] > 0.0F || o.jitter[1] > 0.0F || o.jitter[2] > 0.0F) {
    out = std::move(out) | images::color_jitter(o.jitter[0], o.jitter[1], o.jitter[2]);
  }
  return out;
}

/// An `ImageSource` over `images`, rendered as `options` say.
inline std::shared_ptr<ImageSource> image_source(ImageData images, const ImageOptions& options) {
  if (options.channels != 1 && options.channels != 3) {
    throw stoke::UsageError("stoke_loader: channels must be 1 or 3, not " +
                            std::to_string(options.channels));
  }
  const images::PrepareOptions decoding{.channels = options.channels,
                                        .reduced_decode = options.reduced_decode,
                                        .region_decode = options.region_decode};
  auto source = std::make_shared<ImageSource>(
      ImageSource{std::move(images), augmentation_of(options), decoding, std::nullopt});
  if (!options.mean.empty() || !options.std.empty()) {
    if (options.mean.size() != options.channels || options.std.size() != options.channels) {
      throw stoke::UsageError("stoke_loader: normalize needs one mean and one std per channel (" +
                              std::to_string(options.channels) + ")");
    }
    const images::Normalization normalization =
        options.channels == 3
            ? images::Normalization({options.mean[0], options.mean[1], options.mean[2]},
                                    {options.std[0], options.std[1], options.std[2]})
            : images::Normalization(options.mean[0], options.std[0]);
    source->batcher.emplace(images::ImageBatcher{.augmentation = source->augmentation,
                                                 .normalization = normalization,
                                                 .decoding = decoding});
  }
  return source;
}
#endif

#if defined(STOKE_PYTHON_IMAGES)
/// Where the images are, as Python shows them: the folder, or the tar shards in order (paths,
/// or as their store names them: URLs without credentials, and their endpoints).
inline std::vector<std::string> source_paths(const ImageData& data) {
  if (const auto* folder = std::get_if<images::ImageFolder>(&data))
    return {folder->root().string()};
  if (const auto* stored = std::get_if<images::StoredTarShards>(&data))
    return stored->shard_names();
  std::vector<std::string> out;
  for (const auto& file : std::get<images::TarShards>(data).shards()) out.push_back(file.string());
  return out;
}
#endif

/// Paths as `std::filesystem::path`s.
inline std::vector<std::filesystem::path> paths_of(const std::vector<std::string>& paths) {
  return {paths.begin(), paths.end()};
}

/// Binds the file sources into `m`.
inline void bind_sources(nb::module_& m) {
  m.def(
      "load_npy", [](const std::string& path) { return shard_array(stoke::load_npy(path)); },
      nb::arg("path"), "The array of a .npy file, viewing the mapped file (read-only).");
  m.def(
      "npz_members", [](const std::string& path) { return stoke::npz_members(path); },
      nb::arg("path"), "The names of the arrays of a .npz file.");
  m.def(
      "load_npz",
      [](const std::string& path, const std::string& member, bool inflate) {
        return shard_array(npz_member(path, member, inflate));
      },
      nb::arg("path"), nb::arg("member"), nb::arg("inflate"),
      "A member of a .npz file: viewing the mapped file when stored; a compressed member is "
      "refused, or inflated into memory with inflate=True.");
  m.def(
      "shard_column",
      [](const std::string& name, const std::vector<std::string>& files, const std::string& kind,
         const std::string& member, bool inflate, std::size_t resident, std::size_t io_threads) {
        stoke::ArrayFileFormat format;
        if (kind == "npy") {
          format = stoke::npy_format();
        } else if (kind == "npz") {
          format = npz_format(member, inflate);
        } else if (kind == "hdf5") {
#if defined(STOKE_PYTHON_HDF5)
          format = stoke::hdf5_format(member);
#else
          throw stoke::UsageError(
              "stoke_loader was built without HDF5 (libhdf5 was not found when it was built): "
              "install libhdf5-dev and rebuild it to read HDF5 and NetCDF-4 files");
#endif
        } else {
          throw stoke::UsageError("stoke_loader: no shard format '" + kind + "'");
        }
        return make_shard_column(name, paths_of(files), format,
                                 {.resident = resident, .io_threads = io_threads});
      },
      nb::arg("name"), nb::arg("files"), nb::arg("kind"), nb::arg("member"), nb::arg("inflate"),
      nb::arg("resident"), nb::arg("io_threads"));
  m.def("stored_shard_column", &stored_shard_column, nb::arg("name"), nb::arg("urls"),
        nb::arg("manifest"), nb::arg("member"), nb::arg("resident"), nb::arg("io_threads"),
        nb::arg("cache"), nb::arg("cache_bytes"),
        "The .npy shards (or, with member, one array of the .npz shards) that URLs name, "
        "through stoke's byte stores (and a node cache).");
  m.def("stored_npz_columns", &stored_npz_columns, nb::arg("urls"), nb::arg("members"),
        nb::arg("resident"), nb::arg("io_threads"), nb::arg("cache"), nb::arg("cache_bytes"),
        "(array, column) pairs of the .npz shards that URLs name (all the arrays of the first "
        "object when members is empty), each object read once for all of them.");
  m.def(
      "stored_record_column",
      [](std::string name, const std::vector<std::string>& urls, std::uint8_t code,
         std::uint8_t bits, std::vector<std::size_t> shape, std::size_t resident,
         std::size_t io_threads, const std::string& cache, std::uint64_t cache_bytes) {
        return stored_record_column(std::move(name), urls, nb::dlpack::dtype{code, bits, 1},
                                    std::move(shape), resident, io_threads, cache, cache_bytes);
      },
      nb::arg("name"), nb::arg("urls"), nb::arg("code"), nb::arg("bits"), nb::arg("shape"),
      nb::arg("resident"), nb::arg("io_threads"), nb::arg("cache"), nb::arg("cache_bytes"),
      "Fixed-size records of the objects URLs name, through stoke's byte stores (and a node "
      "cache).");
  m.attr("has_remote_stores") = has_remote_stores;
  m.def(
      "files_matching",
      [](const std::string& directory, const std::string& pattern) {
        std::vector<std::string> out;
        for (const auto& file : stoke::files_matching(directory, pattern)) {
          out.push_back(file.string());
        }
        return out;
      },
      nb::arg("directory"), nb::arg("pattern"));

#if defined(STOKE_PYTHON_HDF5)
  m.attr("has_hdf5") = true;
  nb::class_<Hdf5Column, Column>(m, "Hdf5Column")
      .def(nb::init<std::string, const std::string&, const std::string&>(), nb::arg("name"),
           nb::arg("path"), nb::arg("variable"));
#else
  m.attr("has_hdf5") = false;
#endif

#if defined(STOKE_PYTHON_IMAGES)
  m.attr("has_images") = true;
  nb::class_<ImageOptions>(m, "ImageOptions")
      .def(nb::init<>())
      .def_rw("crop", &ImageOptions::crop)
      .def_rw("height", &ImageOptions::height)
      .def_rw("width", &ImageOptions::width)
      .def_rw("scale", &ImageOptions::scale)
      .def_rw("ratio", &ImageOptions::ratio)
      .def_rw("flip", &ImageOptions::flip)
      .def_rw("jitter", &ImageOptions::jitter)
      .def_rw("channels", &ImageOptions::channels)
      .def_rw("mean", &ImageOptions::mean)
      .def_rw("std", &ImageOptions::std)
      .def_rw("reduced_decode", &ImageOptions::reduced_decode)
      .def_rw("region_decode", &ImageOptions::region_decode);
  nb::class_<ImageSource>(m, "ImageSource")
      .def_prop_ro("size", &ImageSource::size)
      .def_prop_ro("classes",
                   [](const ImageSource& s) {
                     const auto* folder = std::get_if<images::ImageFolder>(&s.images);
                     return folder == nullptr ? std::vector<std::string>{} : folder->classes();
                   })
      .def_prop_ro("paths", [](const ImageSource& s) { return source_paths(s.images); })
      .def("key", [](const ImageSource& s, std::size_t index) {
        return std::visit(
            [index]<class S>(const S& data) -> std::string {
              if constexpr (is_tar_shards<S>) {
                return data.key(index);  // its members' shared name
              } else {
                return data.path(index).string();  // the image file
              }
            },
            s.images);
      });
  m.def(
      "image_folder",
      [](const std::string& root, std::vector<std::string> extensions,
         const ImageOptions& options) {
        return image_source(images::ImageFolder(root, std::move(extensions)), options);
      },
      nb::arg("root"), nb::arg("extensions"), nb::arg("options"));
  m.def(
      "tar_shards",
      [](const std::vector<std::string>& files, std::vector<std::string> image_extensions,
         std::string label_extension, std::size_t num_classes, const ImageOptions& options) {
        images::TarShardsOptions tar{.image_extensions = std::move(image_extensions),
                                     .label_extension = std::move(label_extension),
                                     .num_classes = num_classes};
        return image_source(images::TarShards(paths_of(files), std::move(tar)), options);
      },
      nb::arg("files"), nb::arg("image_extensions"), nb::arg("label_extension"),
      nb::arg("num_classes"), nb::arg("options"));
  m.def(
      "stored_tar_shards",
      [](const std::vector<std::string>& urls, const std::string& manifest, std::size_t resident,
         std::size_t io_threads, const std::string& cache, std::uint64_t cache_bytes,
         std::vector<std::string> image_extensions, std::string label_extension,
         std::size_t num_classes, const ImageOptions& options) {
        images::TarShardsOptions tar{.image_extensions = std::move(image_extensions),
                                     .label_extension = std::move(label_extension),
                                     .num_classes = num_classes};
        return image_source(stored_tar_shards(urls, manifest, resident, io_threads, cache,
                                              cache_bytes, std::move(tar)),
                            options);
      },
      nb::arg("urls"), nb::arg("manifest"), nb::arg("resident"), nb::arg("io_threads"),
      nb::arg("cache"), nb::arg("cache_bytes"), nb::arg("image_extensions"),
      nb::arg("label_extension"), nb::arg("num_classes"), nb::arg("options"),
      "The images of the tar shards that URLs name, through stoke's byte stores (and a node "
      "cache).");
  nb::class_<ImageColumn, Column>(m, "ImageColumn")
      .def(
          "__init__",
          [](ImageColumn* self, std::string name, std::shared_ptr<ImageSource> source) {
            new (self) ImageColumn(std::move(name), std::move(source));
          },
          nb::arg("name"), nb::arg("source"));
  nb::class_<LabelColumn, Column>(m, "LabelColumn")
      .def(
          "__init__",
          [](LabelColumn* self, std::string name, std::shared_ptr<ImageSource> source) {
            new (self) LabelColumn(std::move(name), std::move(source));
          },
          nb::arg("name"), nb::arg("source"));
#else
  m.attr("has_images") = false;
#endif
}

}  // namespace stoke_python
