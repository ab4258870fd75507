// Writes the seed corpus of every fuzz harness: fuzz_seeds <dir> fills <dir>/<harness>/ with
// small valid inputs made by stoke's own writers (and zlib for the gzip IDX files).
#include <zlib.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <stoke/learner/checkpoint.hpp>
#include <stoke/learner/io/safetensors.hpp>
#include <stoke/stoke.hpp>

#include "../support/npy_files.hpp"
#include "fuzz_seed_model.hpp"
#include "fuzz_token_store_input.hpp"

namespace {

using Bytes = std::vector<std::uint8_t>;

void write(const std::filesystem::path& path, const Bytes& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

void write_gzip(const std::filesystem::path& path, const Bytes& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  if (file == nullptr) throw std::runtime_error("fuzz_seeds: cannot write " + path.string());
  gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(file);
}

/// An unsigned-byte IDX file of `dims` whose data counts up from 0.
Bytes idx(const std::vector<std::uint32_t>& dims) {
  Bytes out{0, 0, 0x08, static_cast<std::uint8_t>(dims.size())};
  std::size_t count = 1;
  for (const std::uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8)
      out.push_back(static_cast<std::uint8_t>(d >> shift));
    count *= d;
  }
  for (std::size_t i = 0; i < count; ++i) out.push_back(static_cast<std::uint8_t>(i));
  return out;
}

/// An npy file of `descr` and `shape` whose data bytes count up from 1.
Bytes npy(const std::string& descr, const std::vector<std::size_t>& shape, std::size_t element,
          int version = 1, std::size_t align = 64) {
  std::size_t count = element;
  for (const std::size_t d : shape) count *= d;
  Bytes data(count);
  for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<std::uint8_t>(i + 1);
  return stoke::testing::npy_file(stoke::testing::npy_header(descr, shape), data, version, align);
}

/// Indices as batches.
struct IndexBatcher {
  std::vector<std::size_t> batch(std::vector<std::size_t> items, const stoke::cpu::Device&) const {
    return items;
  }
};

/// The bytes of the file `path`.
Bytes read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// A token store of `T` (documents of the given sequence lengths, tokens counting up) that
/// TokenStoreWriter writes in `scratch`, as the token store harness's input.
template <class T>
Bytes token_store(const std::filesystem::path& scratch,
                  const std::vector<std::vector<std::size_t>>& documents) {
  stoke::TokenStoreWriter<T> writer(scratch / "store");
  T next{};
  for (const auto& document : documents) {
    for (const std::size_t length : document) {
      std::vector<T> tokens(length);
      for (auto& token : tokens) token = next++;
      writer.add_sequence(tokens);
    }
    writer.end_document();
  }
  writer.finish();
  const Bytes bin = read_bytes(scratch / "store.bin");
  const Bytes input = stoke::fuzz::token_store_input(static_cast<std::uint32_t>(bin.size()),
                                                     read_bytes(scratch / "store.idx"));
  std::filesystem::remove(scratch / "store.bin");
  std::filesystem::remove(scratch / "store.idx");
  return input;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_seeds <directory>\n";
    return 2;
  }
  const std::filesystem::path root = argv[1];
  for (const char* harness : {"idx", "mmap_records", "safetensors", "checkpoint", "loader_state",
                              "npy", "npz", "token_store"}) {
    std::filesystem::create_directories(root / harness);
  }

  write(root / "idx" / "labels.idx", idx({5}));
  write(root / "idx" / "images.idx", idx({2, 3, 4}));
  write(root / "idx" / "empty.idx", idx({7, 0}));
  write_gzip(root / "idx" / "labels.idx.gz", idx({5}));
  write_gzip(root / "idx" / "images.idx.gz", idx({2, 3, 4}));

  const auto scratch = root / "token_store";
  write(root / "token_store" / "int32.in", token_store<std::int32_t>(scratch, {{3, 0}, {5, 2}}));
  write(root / "token_store" / "uint16.in", token_store<std::uint16_t>(scratch, {{4}, {}, {1}}));
  write(root / "token_store" / "uint8.in", token_store<std::uint8_t>(scratch, {{7, 1, 2}}));
  write(root / "token_store" / "float64.in", token_store<double>(scratch, {{2}, {3}}));
  write(root / "token_store" / "empty.in", token_store<std::int64_t>(scratch, {}));

  write(root / "npy" / "float32.npy", npy("<f4", {3, 2}, 4));
  write(root / "npy" / "uint8.npy", npy("|u1", {5}, 1));
  write(root / "npy" / "bool.npy", npy("|b1", {2, 2}, 1, 2));
  write(root / "npy" / "int64_v3.npy", npy("<i8", {2}, 8, 3));
  write(root / "npy" / "float64_unaligned.npy", npy("<f8", {1, 2}, 8, 1, 0));
  write(root / "npy" / "empty.npy", npy("<u2", {0, 3}, 2));

  using stoke::testing::zip_file;
  write(root / "npz" / "savez.npz", zip_file({{.name = "x.npy", .content = npy("<f4", {2, 2}, 4)},
                                              {.name = "y.npy", .content = npy("|u1", {3}, 1)}}));
  write(root / "npz" / "savez_compressed.npz",
        zip_file({{.name = "x.npy", .content = npy("<i4", {4}, 4), .deflate = true},
                  {.name = "y.npy", .content = npy("<f8", {1}, 8), .deflate = true}}));
  write(root / "npz" / "zip64.npz",
        zip_file({{.name = "x.npy", .content = npy("<u2", {2}, 2), .padding = 6},
                  {.name = "y.npy", .content = npy("<i2", {3}, 2), .deflate = true}},
                 true));

  write(root / "mmap_records" / "four_byte_records", {4, 1, 2, 3, 4, 5, 6, 7, 8});
  write(root / "mmap_records" / "one_byte_records", {1, 9, 8, 7});

  const std::array<float, 6> weights{0.5F, -1.0F, 2.25F, 3.0F, -0.0F, 1e-30F};
  const std::array<bool, 3> flags{true, false, true};
  const std::array<std::uint8_t, 2> bytes{7, 255};
  const std::array<std::int64_t, 1> step{123456789012LL};
  stoke::save_safetensors(root / "safetensors" / "tensors.safetensors",
                          {{"weight", stoke::make_tensor_view<float>(weights, {2, 3})},
                           {"flags", stoke::make_tensor_view<bool>(flags, {3})},
                           {"bytes", stoke::make_tensor_view<std::uint8_t>(bytes, {2})},
                           {"step", stoke::make_tensor_view<std::int64_t>(step, {})}},
                          {{"epoch", "3"}});

  auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, IndexBatcher>(IndexBatcher{})
                    .batch_size(4)
                    .shuffle(stoke::fuzz::seed_loader_seed)
                    .pad()
                    .build_batch_loader(stoke::fuzz::SeedDataset{});
  std::ofstream(root / "loader_state" / "fresh.json") << stoke::to_json(loader.state()).dump();
  stoke::LoaderState middle;
  {
    auto range = loader.iter();
    auto it = range.begin();
    ++it;
    middle = loader.state();
  }
  std::ofstream(root / "loader_state" / "middle.json") << stoke::to_json(middle).dump();

  const std::array<float, stoke::fuzz::seed_parameters> parameters{1.0F, 2.0F, 3.0F};
  const std::array<float, 2> optimizer_state{0.5F, 0.25F};
  stoke::TrainingProgress progress{1, 12, middle, {1.5, 3, 8}};
  stoke::save_checkpoint(root / "checkpoint" / "checkpoint.safetensors", stoke::fuzz::SeedModel{},
                         parameters, optimizer_state, progress);
  return 0;
}
