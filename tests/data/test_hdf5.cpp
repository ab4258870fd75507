// The HDF5 and NetCDF-4 reader: every numeric dtype, chunked and contiguous, big-endian, gzip,
// groups, row reads by hyperslab across chunk boundaries, Hdf5Dataset (get, get_many, several
// threads, a loader), the chunk cache policy, and every refusal's message. The files are
// written at test time by write_hdf5_fixtures.py (h5py and netCDF4), into STOKE_HDF5_FIXTURES.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include <stoke/data/sources/hdf5.hpp>
#include <stoke/stoke.hpp>

#include "stoke_test_files.hpp"
#include "stoke_test_support.hpp"

namespace {

using stoke::testing::message_of;
using ::testing::AllOf;
using ::testing::HasSubstr;

static_assert(stoke::Dataset<stoke::Hdf5Dataset<float>>);
static_assert(
    std::is_same_v<stoke::dataset_item_t<stoke::Hdf5Dataset<float>>, stoke::ArrayRow<float>>);

/// The value the fixtures hold at flat (row-major) index `i` (see write_hdf5_fixtures.py).
template <class T>
T expected(std::uint64_t i) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(static_cast<double>(i) * 0.25 - 3);
  } else {
    return static_cast<T>(i * 2654435761ULL + 12345ULL);
  }
}

/// Checks that `values` are the fixture's values from flat index `first` on.
template <class T>
void expect_values_from(std::span<const T> values, std::uint64_t first, const std::string& what) {
  std::size_t wrong = 0;
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (values[k] != expected<T>(first + k) && wrong++ < 3) {
      ADD_FAILURE() << what << ": element " << k << " is " << +values[k] << ", expected "
                    << +expected<T>(first + k);
    }
  }
  EXPECT_EQ(wrong, 0U) << what;
}

/// The fixture directory; its tests skip when the writer skipped (no h5py), and fail when the
/// fixtures were not written.
class Hdf5 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::filesystem::exists(dir / "SKIPPED")) {
      std::ifstream reason(dir / "SKIPPED");
      GTEST_SKIP() << std::string(std::istreambuf_iterator<char>(reason), {});
    }
    ASSERT_TRUE(std::filesystem::exists(dir / "COMPLETE"))
        << "no HDF5 fixtures in " << dir
        << ": run ctest (test stoke_data_hdf5_fixtures writes them)";
  }

  const std::filesystem::path dir = STOKE_HDF5_FIXTURES;
  const std::filesystem::path arrays = dir / "arrays.h5";
  const std::filesystem::path climate = dir / "climate.nc";
};

/// Reads `contiguous/<name>` (10 x 3 of `T`) whole and checks type, shape and values.
template <class T>
void expect_contiguous(const std::filesystem::path& file, const char* name) {
  const std::string variable = std::string("/contiguous/") + name;
  const stoke::ArrayInfo info = stoke::read_hdf5_info(file, variable);
  EXPECT_EQ(info.dtype, stoke::dtype_of<T>()) << name;
  EXPECT_EQ(info.shape, (std::vector<std::size_t>{10, 3})) << name;
  const stoke::ArrayShard shard = stoke::load_hdf5(file, variable);
  EXPECT_EQ(shard.info(), info) << name;
  expect_values_from(shard.values<T>(0, 10), 0, variable);
}

TEST_F(Hdf5, ReadsEveryNumericDtype) {
  expect_contiguous<std::uint8_t>(arrays, "uint8");
  expect_contiguous<std::int8_t>(arrays, "int8");
  expect_contiguous<std::uint16_t>(arrays, "uint16");
  expect_contiguous<std::int16_t>(arrays, "int16");
  expect_contiguous<std::uint32_t>(arrays, "uint32");
  expect_contiguous<std::int32_t>(arrays, "int32");
  expect_contiguous<std::uint64_t>(arrays, "uint64");
  expect_contiguous<std::int64_t>(arrays, "int64");
  expect_contiguous<float>(arrays, "float32");
  expect_contiguous<double>(arrays, "float64");
}

TEST_F(Hdf5, ReadsAChunkedVariableWhole) {
  const stoke::ArrayShard shard = stoke::load_hdf5(arrays, "chunked_f32");
  EXPECT_EQ(shard.info().shape, (std::vector<std::size_t>{50, 6, 7}));
  EXPECT_EQ(shard.path(), arrays);
  expect_values_from(shard.values<float>(0, 50), 0, "chunked_f32");
}

TEST_F(Hdf5, RowReadsAcrossChunkBoundariesReadExactlyThoseRows) {
  // Chunks hold rows [4k, 4k + 4); the last chunk row (48, 49) is partial.
  const std::vector<std::pair<std::size_t, std::size_t>> ranges = {
      {0, 1}, {3, 2}, {4, 4}, {7, 9}, {0, 50}, {47, 3}, {49, 1}, {50, 0}, {13, 22}};
  for (const auto& [first, count] : ranges) {
    const std::string what = "rows [" + std::to_string(first) + ", +" + std::to_string(count) + ")";
    const stoke::ArrayShard f32 = stoke::read_hdf5_rows(arrays, "chunked_f32", first, count);
    EXPECT_EQ(f32.info().shape, (std::vector<std::size_t>{count, 6, 7})) << what;
    expect_values_from(f32.values<float>(0, count), first * 42, "chunked_f32 " + what);
    const stoke::ArrayShard i16 = stoke::read_hdf5_rows(arrays, "/chunked_i16", first, count);
    expect_values_from(i16.values<std::int16_t>(0, count), first * 42, "chunked_i16 " + what);
  }
}

TEST_F(Hdf5, ReadsAVariableOfManyChunksInPiecesOfBoundedChunks) {
  const stoke::Hdf5Variable variable(arrays, "many_chunks_i32");
  const stoke::ArrayShard all = variable.load();  // 9000 chunks: 3 reads of at most 4096
  expect_values_from(all.values<std::int32_t>(0, 9000), 0, "many_chunks_i32");
  const stoke::ArrayShard rows = variable.rows(4000, 4200);  // across two pieces
  expect_values_from(rows.values<std::int32_t>(0, 4200), 4000 * 2, "rows [4000, 8200)");
}

TEST_F(Hdf5, ReadsBigEndianVariablesInThisMachinesByteOrder) {
  const stoke::ArrayShard f64 = stoke::load_hdf5(arrays, "big_endian_f64");
  EXPECT_EQ(f64.info().dtype, stoke::DType::f64);
  expect_values_from(f64.values<double>(0, 12), 0, "big_endian_f64");
  const stoke::ArrayShard u32 = stoke::read_hdf5_rows(arrays, "big_endian_u32", 4, 3);
  EXPECT_EQ(u32.info().dtype, stoke::DType::u32);
  expect_values_from(u32.values<std::uint32_t>(0, 3), 4 * 5, "big_endian_u32 rows [4, 7)");
}

TEST_F(Hdf5, ReadsAGzipCompressedChunkedVariable) {
  const stoke::ArrayShard all = stoke::load_hdf5(arrays, "gzip_f32");
  expect_values_from(all.values<float>(0, 64), 0, "gzip_f32");
  const stoke::ArrayShard rows = stoke::read_hdf5_rows(arrays, "gzip_f32", 13, 16);
  expect_values_from(rows.values<float>(0, 16), 13 * 10, "gzip_f32 rows [13, 29)");
}

TEST_F(Hdf5, ReadsAVariableInAGroupWithOrWithoutTheLeadingSlash) {
  for (const char* name : {"/group/sub/temperature", "group/sub/temperature"}) {
    const stoke::ArrayShard shard = stoke::load_hdf5(arrays, name);
    EXPECT_EQ(shard.info().shape, (std::vector<std::size_t>{8, 2, 3})) << name;
    expect_values_from(shard.values<float>(0, 8), 0, name);
  }
}

TEST_F(Hdf5, AVariableWithoutRowsLoadsAsAnEmptyShard) {
  const stoke::ArrayShard shard = stoke::load_hdf5(arrays, "empty_rows");
  EXPECT_EQ(shard.info().shape, (std::vector<std::size_t>{0, 3}));
  EXPECT_TRUE(shard.bytes().empty());
  EXPECT_EQ(stoke::read_hdf5_rows(arrays, "empty_rows", 0, 0).rows(), 0U);
}

TEST_F(Hdf5, ReadsANetCdf4VariableOfTimeLatLonByTimeWindow) {
  const stoke::ArrayInfo info = stoke::read_hdf5_info(climate, "t2m");
  EXPECT_EQ(info, (stoke::ArrayInfo{stoke::DType::f32, {24, 4, 5}}));
  const stoke::ArrayShard window = stoke::read_hdf5_rows(climate, "t2m", 10, 6);
  EXPECT_EQ(window.info().shape, (std::vector<std::size_t>{6, 4, 5}));
  expect_values_from(window.values<float>(0, 6), 10 * 20, "t2m time steps [10, 16)");
  const stoke::ArrayShard precip = stoke::load_hdf5(climate, "/forecast/precip");
  EXPECT_EQ(precip.info(), (stoke::ArrayInfo{stoke::DType::f64, {24, 4}}));
  expect_values_from(precip.values<double>(0, 24), 0, "forecast/precip");
  const stoke::ArrayShard time = stoke::load_hdf5(climate, "time");
  EXPECT_EQ(time.values<double>(23)[0], 23.0);
}

TEST_F(Hdf5, DatasetGetReadsEachRowOfARank1Variable) {
  const stoke::Hdf5Dataset<std::int64_t> dataset(arrays, "rank1_i64");
  ASSERT_EQ(dataset.size(), 25U);
  for (std::size_t i = 0; i < dataset.size(); ++i) {
    const stoke::ArrayRow<std::int64_t> row = dataset.get(i);
    ASSERT_EQ(row.values.size(), 1U);
    EXPECT_EQ(row.values[0], expected<std::int64_t>(i)) << "row " << i;
  }
  EXPECT_THAT([&] { (void)dataset.get(25); },
              ::testing::ThrowsMessage<stoke::UsageError>(HasSubstr("index 25")));
}

TEST_F(Hdf5, DatasetGetManyReadsShuffledAndRepeatedIndicesIntoOneBuffer) {
  const stoke::Hdf5Dataset<float> dataset(arrays, "chunked_f32");
  const std::vector<std::size_t> indices = {7, 3, 4, 5, 49, 3, 0, 48, 22};
  std::vector<stoke::ArrayRow<float>> rows(1);  // get_many appends
  dataset.get_many(indices, rows);
  ASSERT_EQ(rows.size(), indices.size() + 1);
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const auto& row = rows[k + 1];
    ASSERT_EQ(row.values.size(), 42U);
    expect_values_from(row.values, indices[k] * 42, "get_many item " + std::to_string(k));
    EXPECT_EQ(row.owner, rows[1].owner) << "item " << k << " shares the batch's buffer";
  }
  EXPECT_EQ(rows[2].values.data(), rows[6].values.data()) << "row 3, asked twice, read once";
}

TEST_F(Hdf5, DatasetGetManyChecksEveryIndexBeforeReading) {
  const stoke::Hdf5Dataset<float> dataset(arrays, "chunked_f32");
  std::vector<stoke::ArrayRow<float>> rows;
  const std::vector<std::size_t> indices = {1, 2, 50};
  EXPECT_THAT([&] { dataset.get_many(indices, rows); },
              ::testing::ThrowsMessage<stoke::UsageError>(HasSubstr("index 50")));
  EXPECT_TRUE(rows.empty());
}

TEST_F(Hdf5, DatasetGetFromSeveralThreadsReadsTheRightRows) {
  const stoke::Hdf5Dataset<float> dataset(arrays, "gzip_f32");
  std::vector<std::size_t> wrong(4, 0);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < wrong.size(); ++t) {
    threads.emplace_back([&, t] {
      for (std::size_t round = 0; round < 5; ++round) {
        for (std::size_t k = 0; k < dataset.size(); ++k) {
          const std::size_t row = (k * (2 * t + 1) + round) % dataset.size();
          const stoke::ArrayRow<float> sample = dataset.get(row);  // owns its values
          for (std::size_t j = 0; j < sample.values.size(); ++j) {
            wrong[t] += sample.values[j] != expected<float>(row * 10 + j) ? 1 : 0;
          }
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong, std::vector<std::size_t>(4, 0));
}

/// The row number of each `ArrayRow<float>` of gzip_f32 (its first value is row * 2.5 - 3).
struct RowNumbers {
  template <class Device>
  stoke::testing::ItemsBatch<Device> batch(std::vector<stoke::ArrayRow<float>> rows,
                                           const Device& device) const {
    std::vector<std::size_t> out;
    for (const auto& row : rows)
      out.push_back(static_cast<std::size_t>((row.values[0] + 3) / 2.5F));
    return {std::move(out), device};
  }
};

TEST_F(Hdf5, ALoaderWithWorkersDeliversEveryRowOncePerEpoch) {
  const stoke::Hdf5Dataset<float> dataset(arrays, "gzip_f32");
  auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, RowNumbers>({})
                    .batch_size(7)
                    .shuffle(5)
                    .num_workers(2)
                    .build(dataset);
  std::vector<std::size_t> all(dataset.size());
  std::iota(all.begin(), all.end(), 0);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::size_t> seen = stoke::testing::epoch_items(loader);
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, all) << "epoch " << epoch;
  }
}

TEST_F(Hdf5, AVariableKeepsItsChunkShapeAndACacheForOneSlabOfChunkRows) {
  const stoke::Hdf5Variable chunked(arrays, "chunked_f32");
  EXPECT_EQ(chunked.chunk_shape(), (std::vector<std::size_t>{4, 3, 7}));
  // One slab is 2 chunks of 4 x 3 x 7 floats (336 bytes): below libhdf5's default 1 MiB.
  EXPECT_EQ(chunked.chunk_cache().bytes, std::size_t{1} << 20U);
  EXPECT_EQ(chunked.chunk_cache().slots, stoke::detail::next_prime(100 * ((1U << 20U) / 336)));
  // libhdf5 holds the dataset open with that cache.
  const hid_t file = H5Fopen(arrays.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);  // the same file
  ASSERT_GE(file, 0);
  std::vector<hid_t> open(H5Fget_obj_count(file, H5F_OBJ_DATASET));
  H5Fget_obj_ids(file, H5F_OBJ_DATASET, open.size(), open.data());
  ASSERT_EQ(open.size(), 1U) << "the variable keeps one dataset open";
  const hid_t access = H5Dget_access_plist(open.front());
  std::size_t slots = 0;
  std::size_t bytes = 0;
  double w0 = 0;
  H5Pget_chunk_cache(access, &slots, &bytes, &w0);
  H5Pclose(access);
  H5Fclose(file);
  EXPECT_EQ((stoke::Hdf5ChunkCache{slots, bytes}), chunked.chunk_cache());
  EXPECT_EQ(w0, 1.0);
  const stoke::Hdf5Variable contiguous(arrays, "big_endian_f64");
  EXPECT_TRUE(contiguous.chunk_shape().empty());
  EXPECT_EQ(contiguous.chunk_cache(), stoke::Hdf5ChunkCache{});
}

TEST(Hdf5ChunkCache, HoldsEveryChunkOfOneSlabOfChunkRowsWithinTheLimit) {
  using stoke::detail::hdf5_chunk_cache;
  // 100 x 1024 x 1024 floats in chunks of 10 x 128 x 128 (640 KiB): a slab is 8 x 8 chunks.
  const std::vector<std::size_t> shape = {100, 1024, 1024};
  const std::vector<std::size_t> chunk = {10, 128, 128};
  const stoke::Hdf5ChunkCache cache = hdf5_chunk_cache(shape, chunk, 4, std::size_t{64} << 20U);
  EXPECT_EQ(cache.bytes, std::size_t{64} * 640 * 1024);
  EXPECT_EQ(cache.slots, stoke::detail::next_prime(6400));
  EXPECT_EQ(cache.slots, 6421U);
  // Held to the limit: 16 MiB hold 25 such chunks.
  const stoke::Hdf5ChunkCache held = hdf5_chunk_cache(shape, chunk, 4, std::size_t{16} << 20U);
  EXPECT_EQ(held.bytes, std::size_t{16} << 20U);
  EXPECT_EQ(held.slots, stoke::detail::next_prime(2500));
  // Not chunked: no cache.
  EXPECT_EQ(hdf5_chunk_cache(shape, {}, 4, 1U << 20U), stoke::Hdf5ChunkCache{});
  // Declared sizes near 2^64 saturate instead of overflowing.
  const std::vector<std::size_t> huge = {4, std::size_t{1} << 63U, 3};
  EXPECT_EQ(hdf5_chunk_cache(huge, {1, 1, 1}, 8, std::size_t{64} << 20U).bytes,
            std::size_t{64} << 20U);
}

TEST(Hdf5ChunkCache, AReadTouchesAtMost4096Chunks) {
  using stoke::detail::hdf5_rows_per_read;
  // 8 x 8 chunks across: 64 slabs of 10 rows per read.
  EXPECT_EQ(hdf5_rows_per_read({100000, 1024, 1024}, {10, 128, 128}), 640U);
  EXPECT_EQ(hdf5_rows_per_read({9000, 2}, {2, 1}), 4096U);
  // More chunks across than the bound: one slab of chunk rows per read.
  EXPECT_EQ(hdf5_rows_per_read({100, 100000}, {3, 1}), 3U);
  EXPECT_EQ(hdf5_rows_per_read({100, 4}, {}), std::numeric_limits<std::size_t>::max());
}

// ---- Refusals: each names the file, the variable and what is wrong ------------------------

/// The `InputError` message of reading `variable` of `file`.
std::string refusal(const std::filesystem::path& file, const std::string& variable) {
  return message_of<stoke::InputError>([&] { (void)stoke::read_hdf5_info(file, variable); });
}

TEST_F(Hdf5, RefusesAMissingFile) {
  EXPECT_THAT(refusal(dir / "absent.h5", "t2m"),
              AllOf(HasSubstr("HDF5 file '" + (dir / "absent.h5").string() + "'"),
                    HasSubstr("variable 't2m'"), HasSubstr("no such file")));
}

TEST_F(Hdf5, RefusesAFileThatIsNotHdf5WithLibhdf5sReason) {
  EXPECT_THAT(refusal(dir / "not_hdf5.txt", "x"),
              AllOf(HasSubstr((dir / "not_hdf5.txt").string()), HasSubstr("variable 'x'"),
                    HasSubstr("not an HDF5 file"), HasSubstr("libhdf5: "), HasSubstr("signature")));
  EXPECT_THAT(refusal(dir, "x"), HasSubstr("not a regular file"));
}

TEST_F(Hdf5, RefusesANetCdf3FileSayingItIsNotNetCdf4) {
  EXPECT_THAT(refusal(dir / "classic.nc", "v"),
              AllOf(HasSubstr((dir / "classic.nc").string()), HasSubstr("variable 'v'"),
                    HasSubstr("not an HDF5 file"), HasSubstr("NetCDF-3")));
}

TEST_F(Hdf5, RefusesAMissingVariableListingTheVariablesOfItsLevel) {
  EXPECT_THAT(refusal(arrays, "/nope"),
              AllOf(HasSubstr(arrays.string()), HasSubstr("variable '/nope'"),
                    HasSubstr("no 'nope' in group '/', which holds: "), HasSubstr("big_endian_f64"),
                    HasSubstr("chunked_f32"), HasSubstr("group/")));
  // At most 20 names of a level are listed.
  EXPECT_THAT(refusal(arrays, "/many/nope"),
              AllOf(HasSubstr("no 'nope' in group '/many', which holds: v00, v01, "),
                    HasSubstr(", v19, and 5 more")));
  EXPECT_THAT(refusal(arrays, "/group/sub/nope"),
              HasSubstr("no 'nope' in group '/group/sub', which holds: temperature"));
  EXPECT_THAT(refusal(arrays, "/absent_group/t"), HasSubstr("no 'absent_group' in group '/'"));
  EXPECT_THAT(refusal(climate, "t2"),
              AllOf(HasSubstr("no 't2' in group '/'"), HasSubstr("forecast/"), HasSubstr("lat"),
                    HasSubstr("t2m")));
  EXPECT_THAT(refusal(arrays, "/"), HasSubstr("names no variable"));
}

TEST_F(Hdf5, RefusesAGroupOrADatasetUsedAsAGroup) {
  EXPECT_THAT(refusal(arrays, "/group"),
              AllOf(HasSubstr("variable '/group'"),
                    HasSubstr("'/group' is a group, not a variable; it holds: sub/")));
  EXPECT_THAT(refusal(arrays, "/chunked_f32/x"), HasSubstr("'/chunked_f32' is not a group"));
}

TEST_F(Hdf5, RefusesEveryNonNumericTypeNamingItsClass) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"strings", "holds string (HDF5 type class) elements"},
      {"vlen_strings", "holds string (HDF5 type class) elements"},
      {"compound", "holds compound (HDF5 type class) elements"},
      {"vlen_ints", "holds variable-length (HDF5 type class) elements"},
      {"enum", "holds enum (HDF5 type class) elements"},
      {"bools", "holds enum (HDF5 type class) elements"},  // how h5py stores numpy bool
      {"opaque", "holds opaque (HDF5 type class) elements"},
      {"float16", "holds 2-byte float elements"}};
  for (const auto& [variable, what] : cases) {
    EXPECT_THAT(refusal(arrays, variable),
                AllOf(HasSubstr(arrays.string()), HasSubstr("variable '" + variable + "'"),
                      HasSubstr(what), HasSubstr("stoke reads integers of 1, 2, 4 or 8 bytes")));
  }
}

TEST_F(Hdf5, RefusesAScalar) {
  EXPECT_THAT(refusal(arrays, "scalar"),
              AllOf(HasSubstr("variable 'scalar'"), HasSubstr("is a scalar (rank 0)")));
}

TEST_F(Hdf5, RefusesAVariableWhoseCompressionFilterLibhdf5Lacks) {
  EXPECT_THAT(refusal(arrays, "lzf"),
              AllOf(HasSubstr("variable 'lzf'"), HasSubstr("needs HDF5 filter 32000")));
}

TEST_F(Hdf5, RefusesRowsOutOfRange) {
  EXPECT_THAT(message_of<stoke::InputError>(
                  [&] { (void)stoke::read_hdf5_rows(arrays, "chunked_f32", 48, 3); }),
              AllOf(HasSubstr(arrays.string()), HasSubstr("variable 'chunked_f32'"),
                    HasSubstr("rows [48, 51) are out of range: it has 50 rows")));
  EXPECT_THAT(message_of<stoke::InputError>(
                  [&] { (void)stoke::read_hdf5_rows(arrays, "chunked_f32", 51, 0); }),
              HasSubstr("rows [51, 51) are out of range"));
}

TEST_F(Hdf5, RefusesACorruptChunkWithLibhdf5sReasonButReadsTheRowsAroundIt) {
  const std::filesystem::path corrupt = dir / "corrupt.h5";
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)stoke::load_hdf5(corrupt, "gzip_f32"); }),
              AllOf(HasSubstr(corrupt.string()), HasSubstr("variable 'gzip_f32'"),
                    HasSubstr("cannot read rows [0, 20)"), HasSubstr("libhdf5: ")));
  // Chunk 1 holds rows [5, 10): the others still read.
  const stoke::Hdf5Dataset<float> dataset(corrupt, "gzip_f32");
  const stoke::ArrayRow<float> row4 = dataset.get(4);
  const stoke::ArrayRow<float> row10 = dataset.get(10);
  expect_values_from(row4.values, 4 * 10, "row 4");
  expect_values_from(row10.values, 10 * 10, "row 10");
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)dataset.get(7); }),
              HasSubstr("cannot read rows [7, 8)"));
}

TEST_F(Hdf5, RefusesATruncatedFile) {
  const stoke::testing::TempDir temp;
  const std::filesystem::path truncated = temp / "truncated.h5";
  std::filesystem::copy_file(arrays, truncated);
  std::filesystem::resize_file(truncated, std::filesystem::file_size(arrays) / 2);
  const std::string message = message_of<stoke::InputError>([&] {
    (void)stoke::load_hdf5(truncated, "chunked_f32");
    (void)stoke::load_hdf5(truncated, "gzip_f32");
    (void)stoke::load_hdf5(truncated, "lzf");
  });
  EXPECT_THAT(message, AllOf(HasSubstr(truncated.string()), HasSubstr("variable 'chunked_f32'"),
                             HasSubstr("cannot be opened (libhdf5: "), HasSubstr("truncated")));
}

TEST_F(Hdf5, RefusesADatasetOfAnotherElementType) {
  EXPECT_THAT(
      message_of<stoke::InputError>([&] { stoke::Hdf5Dataset<double>(arrays, "chunked_f32"); }),
      AllOf(HasSubstr(arrays.string()), HasSubstr("variable 'chunked_f32'"),
            HasSubstr("holds float32 [50, 6, 7], read as float64")));
}

TEST_F(Hdf5, Libhdf5PrintsNothingAndKeepsTheCallersErrorPrinting) {
  H5E_auto2_t before = nullptr;
  void* before_data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &before, &before_data);
  ::testing::internal::CaptureStderr();
  (void)refusal(dir / "not_hdf5.txt", "x");
  (void)refusal(arrays, "lzf");
  (void)refusal(arrays, "/absent_group/t");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  H5E_auto2_t after = nullptr;
  void* after_data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &after, &after_data);
  EXPECT_EQ(after, before);
  EXPECT_EQ(after_data, before_data);
  EXPECT_NE(before, nullptr) << "libhdf5 prints errors by default";
}

}  // namespace
