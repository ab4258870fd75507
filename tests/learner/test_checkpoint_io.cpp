// Tests of checkpoint I/O: atomic file replacement and the safetensors format.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <stoke/core/error.hpp>
#include <stoke/core/json_fields.hpp>
#include <stoke/learner/checkpoint.hpp>
#include <stoke/learner/io/atomic_file.hpp>
#include <stoke/learner/io/safetensors.hpp>
#include <stoke/learner/metrics.hpp>

#include "stoke_test_files.hpp"

namespace {

using stoke::testing::message_of;
using stoke::testing::TempDir;

using testing::AllOf;
using testing::HasSubstr;
using testing::Not;

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

// ---------------------------------------------------------------- write_file_atomically

TEST(AtomicWrite, CreatesTheFileWithAllBytes) {
  TempDir dir;
  std::vector<std::byte> bytes(3 * 1024 * 1024 + 7);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 31 % 251);
  stoke::write_file_atomically(dir / "blob", bytes);
  const std::string back = read_text(dir / "blob");
  ASSERT_EQ(back.size(), bytes.size());
  EXPECT_EQ(std::memcmp(back.data(), bytes.data(), bytes.size()), 0);
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"blob"}));
}

TEST(AtomicWrite, ReplacesTheContentOfAnExistingFile) {
  TempDir dir;
  write_text(dir / "ckpt", "the old content, longer than the new one");
  stoke::write_file_atomically(dir / "ckpt", std::string_view("new"));
  EXPECT_EQ(read_text(dir / "ckpt"), "new");
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"ckpt"}));
}

TEST(AtomicWrite, WritesTheTemporaryInTheSameDirectoryBeforeRenaming) {
  TempDir dir;
  write_text(dir / "ckpt", "old");
  std::vector<std::string> seen;
  std::string temporary_content;
  stoke::AtomicWriteHooks hooks;
  hooks.before_rename = [&] {
    seen = dir.entries();
    for (const auto& name : seen) {
      if (name != "ckpt") temporary_content = read_text(dir / name);
    }
  };
  stoke::write_file_atomically(dir / "ckpt", std::string_view("new"), hooks);
  ASSERT_EQ(seen.size(), 2U);
  EXPECT_EQ(seen[0], "ckpt");
  EXPECT_THAT(seen[1], HasSubstr("ckpt.tmp."));
  EXPECT_EQ(temporary_content, "new");
}

TEST(AtomicWrite, CrashBeforeRenameLeavesTheOldFileIntactAndNoTemporary) {
  TempDir dir;
  write_text(dir / "ckpt", "old");
  stoke::AtomicWriteHooks hooks;
  hooks.before_rename = [] { throw std::runtime_error("simulated crash"); };
  EXPECT_THROW(stoke::write_file_atomically(dir / "ckpt", std::string_view("new"), hooks),
               std::runtime_error);
  EXPECT_EQ(read_text(dir / "ckpt"), "old");
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"ckpt"}));
}

TEST(AtomicWrite, MissingDirectoryThrowsNamingThePathAndTheReason) {
  TempDir dir;
  const auto message = message_of<stoke::Error>(
      [&] { stoke::write_file_atomically(dir / "no" / "such" / "ckpt", std::string_view("x")); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "no" / "such" / "ckpt").string()),
                             HasSubstr("No such file or directory")));
}

TEST(AtomicWrite, FailedRenameThrowsAndRemovesTheTemporary) {
  TempDir dir;
  std::filesystem::create_directories(dir / "ckpt" / "inside");  // a non-empty directory
  const auto message = message_of<stoke::Error>(
      [&] { stoke::write_file_atomically(dir / "ckpt", std::string_view("x")); });
  EXPECT_THAT(message, AllOf(HasSubstr("rename"), HasSubstr((dir / "ckpt").string())));
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"ckpt"}));
}

TEST(AtomicWrite, AFullDiskThrowsNamingTheFileAndKeepsTheOldContent) {
  TempDir dir;
  write_text(dir / "ckpt", "old");
  const std::string big(64 * 1024, 'x');
  std::string message;
  {
    const stoke::testing::FileSizeLimit full(4096);  // the write fails at 4 KiB
    message = message_of<stoke::Error>(
        [&] { stoke::write_file_atomically(dir / "ckpt", std::string_view(big)); });
  }
  EXPECT_THAT(message,
              AllOf(HasSubstr((dir / "ckpt").string() + ".tmp."), HasSubstr("File too large")));
  EXPECT_EQ(read_text(dir / "ckpt"), "old");
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"ckpt"}));
}

TEST(MetricsCsv, AFullDiskThrowsNamingTheLogAndTheEpoch) {
  stoke::MetricsCsv csv("/dev/full", false);  // every write to /dev/full fails with ENOSPC
  const auto message = message_of<stoke::Error>([&] { csv.write({.epoch = 3}); });
  EXPECT_THAT(message, AllOf(HasSubstr("epoch 3"), HasSubstr("'/dev/full'"),
                             HasSubstr("No space left on device")));
}

// ---------------------------------------------------------------- safetensors

/// Three tensors of different dtypes and the views of them.
struct Sample {
  std::vector<float> weight{0.5F, -1.0F, 2.25F, 3.0F, -0.0F, 1e-30F};
  std::vector<float> bias{1.0F, 2.0F, 3.0F};
  std::vector<std::int64_t> step{123456789012LL};
  std::vector<std::uint8_t> mask{1, 0, 1, 1, 0};
  std::map<std::string, stoke::TensorView> views() const {
    return {{"layer.weight", stoke::make_tensor_view<float>(weight, {2, 3})},
            {"layer.bias", stoke::make_tensor_view<float>(bias, {3})},
            {"step", stoke::make_tensor_view<std::int64_t>(step, {})},
            {"mask", stoke::make_tensor_view<std::uint8_t>(mask, {5})},
            {"empty", stoke::make_tensor_view<float>({}, {0, 4})}};
  }
  std::map<std::string, std::string> metadata{{"epoch", "3"}, {"format", "stoke"}};
};

/// A safetensors file from its parts: the header size, `json`, then `data`.
std::string raw_safetensors(const std::string& json, const std::string& data = "") {
  std::string out(8, '\0');
  const std::uint64_t size = json.size();
  std::memcpy(out.data(), &size, sizeof size);
  return out + json + data;
}

TEST(Safetensors, RoundTripKeepsTensorsShapesValuesAndMetadata) {
  TempDir dir;
  const Sample sample;
  stoke::save_safetensors(dir / "model.safetensors", sample.views(), sample.metadata);
  const stoke::SafetensorsFile file = stoke::load_safetensors(dir / "model.safetensors");
  EXPECT_EQ(file.names(),
            (std::vector<std::string>{"empty", "layer.bias", "layer.weight", "mask", "step"}));
  EXPECT_EQ(file.tensor("layer.weight").dtype, "F32");
  EXPECT_EQ(file.tensor("layer.weight").shape, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(file.values<float>("layer.weight"), sample.weight);
  EXPECT_EQ(file.values<float>("layer.bias"), sample.bias);
  EXPECT_EQ(file.tensor("step").dtype, "I64");
  EXPECT_TRUE(file.tensor("step").shape.empty());
  EXPECT_EQ(file.values<std::int64_t>("step"), sample.step);
  EXPECT_EQ(file.values<std::uint8_t>("mask"), sample.mask);
  EXPECT_EQ(file.tensor("empty").shape, (std::vector<std::size_t>{0, 4}));
  EXPECT_TRUE(file.tensor("empty").data.empty());
  EXPECT_EQ(file.metadata(), sample.metadata);
}

TEST(Safetensors, FileWithoutMetadataHasEmptyMetadata) {
  const Sample sample;
  const std::string bytes = stoke::encode_safetensors(sample.views());
  EXPECT_THAT(bytes, testing::Not(HasSubstr("__metadata__")));
  TempDir dir;
  write_text(dir / "a", bytes);
  EXPECT_TRUE(stoke::load_safetensors(dir / "a").metadata().empty());
}

TEST(Safetensors, HeaderIsItsLengthThenPaddedJsonThenAlignedData) {
  const Sample sample;
  const std::string bytes = stoke::encode_safetensors(sample.views(), sample.metadata);
  ASSERT_GE(bytes.size(), 8U);
  std::uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) {
    header_size = header_size << 8U | static_cast<std::uint8_t>(bytes[static_cast<std::size_t>(i)]);
  }
  EXPECT_EQ(header_size % 8, 0U) << "header padded to a multiple of 8";
  ASSERT_LE(8 + header_size, bytes.size());
  const std::string json = bytes.substr(8, header_size);
  EXPECT_EQ(json.front(), '{');
  const auto last = json.find_last_not_of(' ');
  EXPECT_EQ(json[last], '}');
  EXPECT_LT(json.size() - last - 1, 8U) << "at most 7 spaces of padding";
  const auto header = nlohmann::json::parse(json);
  EXPECT_EQ(header["__metadata__"], (nlohmann::json{{"epoch", "3"}, {"format", "stoke"}}));
  EXPECT_EQ(header["layer.weight"]["dtype"], "F32");
  EXPECT_EQ(header["layer.weight"]["shape"], (nlohmann::json{2, 3}));
  // Largest elements first, then by name: step (I64), empty, layer.bias, layer.weight (F32),
  // mask (U8); each aligned to its element size.
  EXPECT_EQ(header["step"]["data_offsets"], (nlohmann::json{0, 8}));
  EXPECT_EQ(header["empty"]["data_offsets"], (nlohmann::json{8, 8}));
  EXPECT_EQ(header["layer.bias"]["data_offsets"], (nlohmann::json{8, 20}));
  EXPECT_EQ(header["layer.weight"]["data_offsets"], (nlohmann::json{20, 44}));
  EXPECT_EQ(header["mask"]["data_offsets"], (nlohmann::json{44, 49}));
  EXPECT_EQ(bytes.size(), 8 + header_size + 49);
  float first_weight = 0;
  std::memcpy(&first_weight, bytes.data() + 8 + header_size + 20, sizeof first_weight);
  EXPECT_EQ(first_weight, 0.5F);
}

TEST(Safetensors, LoadedTensorsPointIntoTheFileBytesWhichCopiesShare) {
  TempDir dir;
  const Sample sample;
  stoke::save_safetensors(dir / "a", sample.views());
  const auto file = stoke::load_safetensors(dir / "a");
  const auto copy = file;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(copy.tensor("layer.bias").data.data(), file.tensor("layer.bias").data.data());
}

TEST(Safetensors, EncodeRefusesDataThatDoesNotMatchTheShape) {
  const std::vector<float> values{1, 2, 3};
  std::map<std::string, stoke::TensorView> tensors{
      {"w", {"F32", {2, 2}, std::as_bytes(std::span<const float>(values))}}};
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)stoke::encode_safetensors(tensors); }),
              AllOf(HasSubstr("'w'"), HasSubstr("12 data bytes")));
  tensors["w"].dtype = "F31";
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)stoke::encode_safetensors(tensors); }),
              AllOf(HasSubstr("'w'"), HasSubstr("unknown dtype 'F31'")));
}

TEST(Safetensors, MissingTensorThrowsOutOfRangeNamingIt) {
  TempDir dir;
  stoke::save_safetensors(dir / "a", Sample{}.views());
  const auto file = stoke::load_safetensors(dir / "a");
  EXPECT_THAT(message_of<stoke::UsageError>([&] { (void)file.tensor("nope"); }),
              AllOf(HasSubstr("'nope'"), HasSubstr((dir / "a").string())));
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)file.values<double>("layer.bias"); }),
              AllOf(HasSubstr("'layer.bias'"), HasSubstr("F32"), HasSubstr("F64")));
}

/// The message of loading `bytes` from a file; checks it names the file.
std::string load_refusal(const std::string& bytes) {
  TempDir dir;
  write_text(dir / "bad.safetensors", bytes);
  auto message = message_of<stoke::InputError>(
      [&] { (void)stoke::load_safetensors(dir / "bad.safetensors"); });
  EXPECT_THAT(message, HasSubstr((dir / "bad.safetensors").string()));
  return message;
}

TEST(SafetensorsRefusal, MissingFile) {
  TempDir dir;
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)stoke::load_safetensors(dir / "none"); }),
              AllOf(HasSubstr((dir / "none").string()), HasSubstr("No such file")));
}

TEST(SafetensorsRefusal, FileShorterThanEightBytes) {
  EXPECT_THAT(load_refusal("abcde"), AllOf(HasSubstr("only 5 bytes"), HasSubstr("offset 0")));
}

TEST(SafetensorsRefusal, HeaderSizeLargerThanTheFile) {
  std::string bytes = raw_safetensors("{}");
  bytes[0] = static_cast<char>(100);
  EXPECT_THAT(load_refusal(bytes), AllOf(HasSubstr("header size 100"), HasSubstr("offset 0"),
                                         HasSubstr("only 2 bytes follow offset 8")));
}

TEST(SafetensorsRefusal, InvalidJsonGivesTheParserMessageAndOffset8) {
  EXPECT_THAT(load_refusal(raw_safetensors("{\"w\": [1,}")),
              AllOf(HasSubstr("invalid JSON"), HasSubstr("offset 8"), HasSubstr("parse_error")));
}

TEST(SafetensorsRefusal, HeaderThatIsNotAnObject) {
  EXPECT_THAT(load_refusal(raw_safetensors("[1, 2]  ")),
              AllOf(HasSubstr("not an object"), HasSubstr("offset 8")));
}

TEST(SafetensorsRefusal, MissingFieldNamesTheTensor) {
  EXPECT_THAT(
      load_refusal(raw_safetensors(R"({"w": {"shape": [1], "data_offsets": [0, 4]}})", "abcd")),
      AllOf(HasSubstr("tensor 'w'"), HasSubstr("missing field \"dtype\""), HasSubstr("offset 8")));
}

TEST(SafetensorsRefusal, IllTypedFieldNamesTheTensor) {
  EXPECT_THAT(load_refusal(raw_safetensors(
                  R"({"w": {"dtype": "F32", "shape": "1", "data_offsets": [0, 4]}})", "abcd")),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("\"shape\" is not an array")));
  EXPECT_THAT(load_refusal(raw_safetensors(
                  R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", "abcd")),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("-1, not a non-negative integer")));
  EXPECT_THAT(load_refusal(raw_safetensors(
                  R"({"w": {"dtype": 32, "shape": [1], "data_offsets": [0, 4]}})", "abcd")),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("\"dtype\" is not a string")));
  EXPECT_THAT(
      load_refusal(
          raw_safetensors(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", "abcd")),
      AllOf(HasSubstr("tensor 'w'"), HasSubstr("\"data_offsets\" has 1 elements, expected 2")));
}

TEST(SafetensorsRefusal, UnknownDtypeNamesTheTensorAndTheDtype) {
  EXPECT_THAT(load_refusal(raw_safetensors(
                  R"({"w": {"dtype": "F33", "shape": [1], "data_offsets": [0, 4]}})", "abcd")),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("unknown dtype \"F33\"")));
}

TEST(SafetensorsRefusal, DataOffsetsOutsideTheDataSection) {
  // header of 64 bytes: the data section is file offsets 72 to 76.
  std::string json = R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
  json.resize(64, ' ');
  EXPECT_THAT(load_refusal(raw_safetensors(json, "abcd")),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("data_offsets [0, 8]"),
                    HasSubstr("file offsets 72 to 80"), HasSubstr("outside the data section"),
                    HasSubstr("of 4 bytes (file offsets 72 to 76)")));
}

TEST(SafetensorsRefusal, DataOffsetsThatDoNotMatchShapeTimesDtypeSize) {
  std::string json = R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})";
  json.resize(64, ' ');
  EXPECT_THAT(load_refusal(raw_safetensors(json, "abcdefgh")),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("file offsets 72 to 80"),
                    HasSubstr("hold 8 bytes"), HasSubstr("need 12")));
}

TEST(SafetensorsRefusal, OverlappingTensors) {
  EXPECT_THAT(
      load_refusal(raw_safetensors(R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                                       "b": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}})",
                                   "abc")),
      AllOf(HasSubstr("tensor 'b'"), HasSubstr("overlap")));
}

TEST(SafetensorsRefusal, BytesNotCoveredByAnyTensor) {
  EXPECT_THAT(load_refusal(raw_safetensors(
                  R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}})", "abcd")),
              AllOf(HasSubstr("end at data offset 2"), HasSubstr("2 more bytes")));
}

TEST(SafetensorsRefusal, MetadataValueThatIsNotAString) {
  EXPECT_THAT(load_refusal(raw_safetensors(R"({"__metadata__": {"epoch": 3}})")),
              AllOf(HasSubstr("__metadata__"), HasSubstr("\"epoch\""), HasSubstr("not a string")));
}

TEST(Safetensors, BoolTensorsReadAsBools) {
  TempDir dir;
  const std::array<bool, 3> flags{true, false, true};
  stoke::save_safetensors(dir / "flags.safetensors",
                          {{"flags", stoke::make_tensor_view<bool>(flags, {3})}});
  EXPECT_EQ(stoke::load_safetensors(dir / "flags.safetensors").values<bool>("flags"),
            (std::vector<bool>{true, false, true}));
}

TEST(SafetensorsRefusal, ABoolByteThatIsNeither0Nor1NamesTheElementAndOffset) {
  TempDir dir;
  const std::string json = R"({"flags":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})";
  std::ofstream(dir / "bad.safetensors", std::ios::binary) << raw_safetensors(json, "\x01\x02");
  const auto file = stoke::load_safetensors(dir / "bad.safetensors");
  const auto message = message_of<stoke::InputError>([&] { (void)file.values<bool>("flags"); });
  EXPECT_THAT(message,
              AllOf(HasSubstr((dir / "bad.safetensors").string()),
                    HasSubstr("element 1 at byte offset " + std::to_string(8 + json.size() + 1)),
                    HasSubstr("is 2, not 0 or 1")));
}

TEST(SafetensorsRefusal, AHeaderAboveTheLimitIsRefusedBeforeItIsRead) {
  TempDir dir;
  std::string bytes(8, '\0');
  const std::uint64_t size = stoke::safetensors_max_header + 1;
  std::memcpy(bytes.data(), &size, sizeof size);
  std::ofstream(dir / "big.safetensors", std::ios::binary) << bytes << "{}";
  const auto message = message_of<stoke::InputError>(
      [&] { (void)stoke::load_safetensors(dir / "big.safetensors"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "big.safetensors").string()),
                             HasSubstr("header size 104857601 (at offset 0) is above the limit "
                                       "of 104857600 bytes")));
}

TEST(SafetensorsRefusal, ANumberBeyondDoubleRangeIsAnInputError) {
  TempDir dir;
  std::ofstream(dir / "huge.safetensors", std::ios::binary)
      << raw_safetensors(R"({"x":{"dtype":"U8","shape":[1e400],"data_offsets":[0,0]}})");
  const auto message = message_of<stoke::InputError>(
      [&] { (void)stoke::load_safetensors(dir / "huge.safetensors"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "huge.safetensors").string()),
                             HasSubstr("unreadable JSON header at offset 8")));
}

/// 100,000 arrays, one inside the other: printing it recursively overflows the stack.
std::string nested_100000_deep() {
  return std::string(100'000, '[') + std::string(100'000, ']');
}

TEST(SafetensorsRefusal, AShapeNested100000DeepIsRefusedNamingTheTensorAndTheField) {
  EXPECT_THAT(
      load_refusal(raw_safetensors(R"({"w": {"dtype": "U8", "shape": [)" + nested_100000_deep() +
                                   R"(], "data_offsets": [0, 0]}})")),
      AllOf(HasSubstr("tensor 'w' in the JSON header at offset 8"),
            HasSubstr("field \"shape\" holds an array of 1 elements, not a non-negative "
                      "integer")));
}

TEST(SafetensorsRefusal, MetadataNested100000DeepIsRefusedNamingTheField) {
  EXPECT_THAT(load_refusal(raw_safetensors(R"({"__metadata__": )" + nested_100000_deep() + "}")),
              HasSubstr("\"__metadata__\" in the JSON header at offset 8 is an array of 1 "
                        "elements, not an object"));
  EXPECT_THAT(
      load_refusal(raw_safetensors(R"({"__metadata__": {"epoch": )" + nested_100000_deep() + "}}")),
      HasSubstr("\"__metadata__\" entry \"epoch\" in the JSON header at offset 8 is an array of 1 "
                "elements, not a string"));
}

TEST(SafetensorsRefusal, AValueAnErrorQuotesIsCutShort) {
  const std::string long_text(10'000, 'x');
  const std::string cut = std::string(stoke::json_excerpt_chars - 1, 'x') + "...";
  const std::string dtype_message = load_refusal(raw_safetensors(
      R"({"w": {"dtype": ")" + long_text + R"(", "shape": [1], "data_offsets": [0, 1]}})", "a"));
  EXPECT_THAT(dtype_message, HasSubstr("unknown dtype \"" + cut));
  EXPECT_THAT(dtype_message, Not(HasSubstr(std::string(stoke::json_excerpt_chars, 'x'))));
  const std::string shape_message = load_refusal(raw_safetensors(
      R"({"w": {"dtype": "U8", "shape": [")" + long_text + R"("], "data_offsets": [0, 1]}})", "a"));
  EXPECT_THAT(shape_message, HasSubstr("field \"shape\" holds \"" + cut));
  EXPECT_LT(shape_message.size(), 400U);
  const std::string metadata_message =
      load_refusal(raw_safetensors(R"({"__metadata__": {")" + long_text + R"(": 1e300}})"));
  EXPECT_THAT(metadata_message,
              AllOf(HasSubstr("\"__metadata__\" entry \"" + cut), HasSubstr("is 1e+300")));
  EXPECT_LT(metadata_message.size(), 400U);
}

// ---------------------------------------------------------------- checkpoints

/// A model without named parameters: its weights are one tensor, "model.parameters".
struct PlainModel {};

/// Writes a small checkpoint at `path` and returns what it holds.
stoke::Checkpoint write_checkpoint(const std::filesystem::path& path) {
  stoke::Checkpoint checkpoint{{1.0F, 2.0F, 3.0F}, {0.5F}, {}};
  checkpoint.progress.epoch = 2;
  checkpoint.progress.global_step = 17;
  checkpoint.progress.loader = {7, 2, 8, 40, true, false, stoke::Remainder::pad};
  checkpoint.progress.epoch_sums = {1.5, 3, 8};
  stoke::save_checkpoint(path, PlainModel{}, checkpoint.parameters, checkpoint.optimizer_state,
                         checkpoint.progress);
  return checkpoint;
}

/// Copies the checkpoint `from` to `to` with its "training" metadata edited by `edit`; with
/// `keep_crc` the old checksum stays, else it is computed anew (a deliberate forgery).
template <class Edit>
void edit_training(const std::filesystem::path& from, const std::filesystem::path& to, Edit edit,
                   bool keep_crc = false) {
  const auto file = stoke::load_safetensors(from);
  std::map<std::string, stoke::TensorView> tensors;
  for (const auto& name : file.names()) tensors.emplace(name, file.tensor(name));
  auto metadata = file.metadata();
  auto training = nlohmann::json::parse(metadata.at("training"));
  edit(training);
  metadata["training"] = training.dump();
  if (!keep_crc) {
    metadata["crc32"] = std::to_string(stoke::detail::checkpoint_crc(tensors, training.dump()));
  }
  stoke::save_safetensors(to, tensors, metadata);
}

TEST(Checkpoint, RoundTripsWeightsOptimizerStateAndProgress) {
  TempDir dir;
  const auto written = write_checkpoint(dir / "ckpt");
  const auto read = stoke::load_checkpoint(dir / "ckpt", PlainModel{}, 3);
  EXPECT_EQ(read.parameters, written.parameters);
  EXPECT_EQ(read.optimizer_state, written.optimizer_state);
  EXPECT_EQ(read.progress.epoch, 2U);
  EXPECT_EQ(read.progress.global_step, 17U);
  EXPECT_EQ(read.progress.loader.consumed, 8U);
  EXPECT_EQ(read.progress.epoch_sums.count, 8U);
}

TEST(Checkpoint, AnEditedEpochIsCaughtByTheChecksum) {
  TempDir dir;
  write_checkpoint(dir / "ckpt");
  edit_training(dir / "ckpt", dir / "edited", [](nlohmann::json& t) { t["epoch"] = 5; }, true);
  const auto message = message_of<stoke::InputError>(
      [&] { (void)stoke::load_checkpoint(dir / "edited", PlainModel{}, 3); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "edited").string()), HasSubstr("CRC-32"),
                             HasSubstr("\"training\" metadata")));
}

TEST(Checkpoint, TrainingFieldsOfTheWrongTypeOrRangeAreRefusedNamingThem) {
  TempDir dir;
  write_checkpoint(dir / "ckpt");
  const std::vector<std::pair<std::string, nlohmann::json>> cases{
      {"epoch", -1}, {"epoch", 2.7}, {"epoch", 1e30}, {"global_step", "17"}};
  for (const auto& [field, value] : cases) {
    edit_training(dir / "ckpt", dir / "forged",
                  [&, field = field, value = value](nlohmann::json& t) { t[field] = value; });
    const auto message = message_of<stoke::InputError>(
        [&] { (void)stoke::load_checkpoint(dir / "forged", PlainModel{}, 3); });
    EXPECT_THAT(message, AllOf(HasSubstr((dir / "forged").string()),
                               HasSubstr("field \"" + field + "\" is not a non-negative integer")))
        << value.dump();
  }
  edit_training(dir / "ckpt", dir / "forged",
                [](nlohmann::json& t) { t["epoch_sums"]["loss_sum"] = nullptr; });
  EXPECT_THAT(message_of<stoke::InputError>(
                  [&] { (void)stoke::load_checkpoint(dir / "forged", PlainModel{}, 3); }),
              AllOf(HasSubstr("\"epoch_sums\" field \"loss_sum\" is not a finite number")));
}

TEST(Checkpoint, ALoaderStateErrorNamesTheCheckpoint) {
  TempDir dir;
  write_checkpoint(dir / "ckpt");
  edit_training(dir / "ckpt", dir / "forged",
                [](nlohmann::json& t) { t["loader"]["consumed"] = -8; });
  const auto message = message_of<stoke::InputError>(
      [&] { (void)stoke::load_checkpoint(dir / "forged", PlainModel{}, 3); });
  EXPECT_THAT(message, AllOf(HasSubstr("checkpoint '" + (dir / "forged").string() + "'"),
                             HasSubstr("\"loader\" field \"consumed\"")));
}

}  // namespace
