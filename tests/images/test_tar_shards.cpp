// WebDataset tar shards: the tar reader (headers, checksums, numbers, GNU long names, pax
// headers), TarWriter round trips, tars written by Python's tarfile, samples refused at open
// naming the shard and the key or the offset, and loaders over TarShards.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <stoke/images/detail/tar_reader.hpp>
#include <stoke/images/tar_shards.hpp>
#include <stoke/images/tar_writer.hpp>
#include <stoke/stoke.hpp>

#include "stoke_test_files.hpp"
#include "stoke_test_support.hpp"

namespace {

using Bytes = std::vector<std::uint8_t>;
using stoke::images::EncodedImage;
using stoke::images::TarShards;
using stoke::images::TarWriter;
using stoke::testing::message_of;
using stoke::testing::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;

/// The bytes standing for image `id`: `id` in 4 little-endian bytes, then a pattern (the same
/// formula as the Python script below).
Bytes payload(std::size_t id, std::size_t size) {
  Bytes out(size);
  for (std::size_t j = 0; j < size; ++j) {
    out[j] = j < 4 ? static_cast<std::uint8_t>(id >> (8 * j))
                   : static_cast<std::uint8_t>((id * 7 + j * 13) % 256);
  }
  return out;
}

/// The id a `payload` starts with.
std::size_t id_of(const EncodedImage& image) {
  std::size_t id = 0;
  for (std::size_t j = 0; j < 4; ++j) id |= std::size_t{image.bytes[j]} << (8 * j);
  return id;
}

Bytes as_bytes(const std::string& text) {
  return {text.begin(), text.end()};
}

Bytes read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::filesystem::path& path, const Bytes& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

/// A shard of samples `first .. first + count - 1`: key `s<id>`, an image of `100 + 37 * id`
/// bytes and label `id % 5`.
std::filesystem::path write_shard(const std::filesystem::path& path, std::size_t first,
                                  std::size_t count) {
  TarWriter tar(path);
  for (std::size_t id = first; id < first + count; ++id) {
    const std::string key = "s" + std::to_string(id);
    tar.add(key + ".jpg", payload(id, 100 + 37 * id));
    tar.add(key + ".cls", std::to_string(id % 5));
  }
  tar.finish();
  return path;
}

/// The message of the `InputError` opening `files` throws.
std::string tar_refusal(std::vector<std::filesystem::path> files,
                        stoke::images::TarShardsOptions options = {}) {
  return message_of<stoke::InputError>([&] { (void)TarShards(files, options); });
}

/// A shard written with `members` (name, content) by TarWriter.
std::filesystem::path shard_of(const TempDir& dir, const std::string& name,
                               const std::vector<std::pair<std::string, std::string>>& members) {
  TarWriter tar(dir / name);
  for (const auto& [member, content] : members) tar.add(member, content);
  tar.finish();
  return dir / name;
}

// --- hand-made headers ----------------------------------------------------------------------

/// Rewrites the checksum of the header at `at`.
void set_checksum(Bytes& tar, std::size_t at) {
  std::memset(tar.data() + at + 148, ' ', 8);
  unsigned sum = 0;
  for (std::size_t i = 0; i < 512; ++i) sum += tar[at + i];
  std::snprintf(reinterpret_cast<char*>(tar.data() + at + 148), 8, "%06o", sum);
}

/// Appends a POSIX ustar header for `name` of `type` with the octal size `size`, then `data`
/// padded to a block.
void append_member(Bytes& tar, const std::string& name, char type, std::size_t size,
                   const Bytes& data) {
  const std::size_t at = tar.size();
  tar.resize(at + 512, 0);
  std::memcpy(tar.data() + at, name.data(), std::min<std::size_t>(name.size(), 100));
  std::snprintf(reinterpret_cast<char*>(tar.data() + at + 100), 8, "%07o", 0644U);
  std::snprintf(reinterpret_cast<char*>(tar.data() + at + 124), 12, "%011zo", size);
  tar[at + 156] = static_cast<std::uint8_t>(type);
  std::memcpy(tar.data() + at + 257,
              "ustar\0"
              "00",
              8);
  set_checksum(tar, at);
  tar.insert(tar.end(), data.begin(), data.end());
  tar.resize((tar.size() + 511) / 512 * 512, 0);
}

void append_end(Bytes& tar) {
  tar.resize(tar.size() + 1024, 0);
}

/// A pax record `<length> key=value\n`.
std::string pax_record(const std::string& key, const std::string& value) {
  const std::string body = " " + key + "=" + value + "\n";
  std::size_t length = body.size() + 1;
  while (std::to_string(length).size() + body.size() != length) ++length;
  return std::to_string(length) + body;
}

// --- the reader -------------------------------------------------------------------------------

TEST(TarReader, ReadsOctalAndBase256NumbersAndRefusesTheRest) {
  using stoke::images::detail::tar_number;
  const auto field = [](const std::string& text) {
    return tar_number(std::as_bytes(std::span(text.data(), text.size())));
  };
  EXPECT_EQ(field(std::string("00000001750\0", 12)), 1000U);
  EXPECT_EQ(field(std::string("   1750 \0\0\0\0", 12)), 1000U);
  EXPECT_EQ(field(std::string(12, '\0')), 0U);
  EXPECT_EQ(field(std::string("\x80\0\0\0\0\0\0\0\x02\0\0\x01", 12)), (2ULL << 24U) + 1);
  EXPECT_FALSE(field(std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xfe", 12)));
  EXPECT_FALSE(field(std::string("\x80\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 12)))
      << "88 bits overflow";
  EXPECT_FALSE(field(std::string("0000000017x9", 12)));
  EXPECT_FALSE(field(std::string("00000001 7 ", 11)));
  EXPECT_FALSE(field(std::string("00000000008\0", 12)));
}

TEST(TarReader, ListsRegularMembersSkippingDirectoriesAndGlobalHeaders) {
  Bytes tar;
  append_member(tar, "global", 'g', 0, {});
  append_member(tar, "d/", '5', 0, {});
  append_member(tar, "d/a.jpg", '0', 3, as_bytes("abc"));
  append_member(tar, "d/link", '2', 0, {});
  append_member(tar, "d/a.cls", '\0', 1, as_bytes("7"));
  append_end(tar);
  const auto members =
      stoke::images::detail::read_tar_members(std::as_bytes(std::span(tar)), "x.tar");
  ASSERT_EQ(members.size(), 2U);
  EXPECT_EQ(members[0].name, "d/a.jpg");
  EXPECT_EQ(members[0].header_offset, 1024U);
  EXPECT_EQ(members[0].data_offset, 1536U);
  EXPECT_EQ(members[0].size, 3U);
  EXPECT_EQ(members[1].name, "d/a.cls");
  EXPECT_EQ(members[1].data_offset, 3072U);
}

// --- TarWriter and TarShards ------------------------------------------------------------------

TEST(TarShards, RoundTripsShardsWrittenByTarWriter) {
  TempDir dir;
  const auto a = write_shard(dir / "train-000.tar", 0, 4);
  const auto b = write_shard(dir / "train-001.tar", 4, 3);
  const TarShards shards({a, b});
  ASSERT_EQ(shards.size(), 7U);
  EXPECT_EQ(shards.shard_begins(), (std::vector<std::size_t>{0, 4}));
  EXPECT_EQ(shards.shards(), (std::vector<std::filesystem::path>{a, b}));
  for (std::size_t id = 0; id < 7; ++id) {
    const EncodedImage image = shards.get(id);
    const Bytes expected = payload(id, 100 + 37 * id);
    EXPECT_TRUE(std::ranges::equal(image.bytes, expected)) << "sample " << id;
    EXPECT_EQ(image.label, id % 5);
    EXPECT_EQ(shards.label(id), id % 5);
    EXPECT_EQ(shards.key(id), "s" + std::to_string(id));
    EXPECT_EQ(image.source, (id < 4 ? a : b).string() + ":s" + std::to_string(id));
  }
  EXPECT_THROW((void)shards.get(7), stoke::UsageError);
  EXPECT_THROW((void)shards.key(7), stoke::UsageError);
}

TEST(TarShards, OpensAGlobInNameOrder) {
  TempDir dir;
  write_shard(dir / "part-b.tar", 3, 2);
  write_shard(dir / "part-a.tar", 0, 3);
  std::ofstream(dir / "notes.txt") << "not a shard";
  const TarShards shards(dir.path(), "part-*.tar");
  ASSERT_EQ(shards.shards().size(), 2U);
  EXPECT_EQ(shards.shards()[0].filename(), "part-a.tar");
  EXPECT_EQ(shards.shard_begins(), (std::vector<std::size_t>{0, 3}));
  for (std::size_t i = 0; i < shards.size(); ++i) EXPECT_EQ(id_of(shards.get(i)), i);
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)TarShards(dir.path(), "*.tgz"); }),
              HasSubstr("matches '*.tgz'"));
  EXPECT_THROW((void)TarShards(std::vector<std::filesystem::path>{}), stoke::UsageError);
}

TEST(TarShards, WritesAndReadsLongNamesThroughGnuLongNameEntries) {
  TempDir dir;
  const std::string folder = "class_" + std::string(150, 'q') + "/";
  {
    TarWriter tar(dir / "long.tar");
    for (std::size_t id = 0; id < 3; ++id) {
      tar.add(folder + "img" + std::to_string(id) + ".png", payload(id, 600));
      tar.add(folder + "img" + std::to_string(id) + ".cls", std::to_string(id) + "\n");
    }
    tar.finish();
  }
  const Bytes bytes = read_file(dir / "long.tar");
  ASSERT_GE(bytes.size(), 512U);
  EXPECT_EQ(bytes[156], 'L') << "the first entry is a GNU long name";
  const TarShards shards({dir / "long.tar"});
  ASSERT_EQ(shards.size(), 3U);
  for (std::size_t id = 0; id < 3; ++id) {
    EXPECT_EQ(shards.key(id), folder + "img" + std::to_string(id));
    EXPECT_EQ(shards.get(id).label, id);
    EXPECT_TRUE(std::ranges::equal(shards.get(id).bytes, payload(id, 600)));
  }
  TarWriter refuse(dir / "refuse.tar");
  EXPECT_THROW(refuse.add(std::string(70000, 'n') + ".jpg", "x"), stoke::UsageError);
  EXPECT_THROW(refuse.add(std::string("a\0b.jpg", 7), "x"), stoke::UsageError);
}

TEST(TarShards, IgnoresOtherExtensionsAndMatchesExtensionsWithoutCase) {
  TempDir dir;
  const auto shard = shard_of(dir, "mixed.tar",
                              {{"__meta__.json", "{}"},
                               {"a.JPG", "AAAA"},
                               {"a.json", "{}"},
                               {"a.Cls", "1"},
                               {"notes.txt", "ignored key"},
                               {"noextension", "ignored"},
                               {"b.png", "BBBB"},
                               {"b.cls", " 2\n"},
                               {"b.txt", "ignored member"}});
  const TarShards shards({shard});
  ASSERT_EQ(shards.size(), 2U);
  EXPECT_EQ(shards.key(0), "a");
  EXPECT_EQ(shards.label(0), 1U);
  EXPECT_EQ(std::string(shards.get(0).bytes.begin(), shards.get(0).bytes.end()), "AAAA");
  EXPECT_EQ(shards.key(1), "b");
  EXPECT_EQ(shards.label(1), 2U);
  // Other extensions, chosen by the options.
  const TarShards webp({shard_of(dir, "webp.tar", {{"k.webp", "W"}, {"k.txt", "3"}})},
                       {.image_extensions = {".webp"}, .label_extension = "TXT"});
  ASSERT_EQ(webp.size(), 1U);
  EXPECT_EQ(webp.label(0), 3U);
}

TEST(TarShards, AnImageOutlivesTheDataset) {
  TempDir dir;
  EncodedImage image;
  {
    const TarShards shards({write_shard(dir / "one.tar", 0, 2)});
    image = shards.get(1);
  }
  EXPECT_TRUE(std::ranges::equal(image.bytes, payload(1, 137)));
}

// --- refusals -----------------------------------------------------------------------------------

TEST(TarShards, RefusesASampleWithoutItsImageOrLabelNamingShardAndKey) {
  TempDir dir;
  const auto no_image = shard_of(dir, "no-image.tar",
                                 {{"a.jpg", "A"},
                                  {"a.cls", "0"},
                                  {"b.cls", "1"},
                                  {"b.json", "{}"},
                                  {"c.jpg", "C"},
                                  {"c.cls", "2"}});
  EXPECT_THAT(tar_refusal({no_image}), AllOf(HasSubstr(no_image.string()), HasSubstr("sample 'b'"),
                                             HasSubstr("no image member (.jpg, .jpeg, .png)")));
  const auto no_label =
      shard_of(dir, "no-label.tar", {{"a.jpg", "A"}, {"a.cls", "0"}, {"b.png", "B"}});
  EXPECT_THAT(tar_refusal({no_label}), AllOf(HasSubstr(no_label.string()), HasSubstr("sample 'b'"),
                                             HasSubstr("no label member (.cls)")));
}

TEST(TarShards, RefusesDuplicateMembersNamingShardAndKey) {
  TempDir dir;
  const auto two_images =
      shard_of(dir, "two-images.tar", {{"k1.jpg", "A"}, {"k1.png", "B"}, {"k1.cls", "0"}});
  EXPECT_THAT(tar_refusal({two_images}),
              AllOf(HasSubstr(two_images.string()), HasSubstr("sample 'k1'"),
                    HasSubstr("a second image member 'k1.png' at offset 1024"),
                    HasSubstr("the first is 'k1.jpg'")));
  const auto two_labels =
      shard_of(dir, "two-labels.tar", {{"k2.jpg", "A"}, {"k2.cls", "0"}, {"k2.cls", "1"}});
  EXPECT_THAT(tar_refusal({two_labels}),
              AllOf(HasSubstr("sample 'k2'"), HasSubstr("a second label member 'k2.cls'")));
  const auto apart = shard_of(dir, "apart.tar",
                              {{"k3.jpg", "A"}, {"k4.jpg", "B"}, {"k4.cls", "1"}, {"k3.cls", "0"}});
  EXPECT_THAT(tar_refusal({apart}), HasSubstr("sample 'k3': no label member"));
  const auto again = shard_of(dir, "again.tar",
                              {{"k5.jpg", "A"},
                               {"k5.cls", "0"},
                               {"k6.jpg", "B"},
                               {"k6.cls", "1"},
                               {"k5.txt", "x"},
                               {"k5.png", "C"}});
  EXPECT_THAT(tar_refusal({again}), AllOf(HasSubstr("sample 'k5'"), HasSubstr("not consecutive"),
                                          HasSubstr("member 'k5.png' at offset 5120")));
}

TEST(TarShards, RefusesBadLabelsNamingShardKeyAndText) {
  TempDir dir;
  const auto words = shard_of(dir, "words.tar", {{"k.jpg", "A"}, {"k.cls", "cat"}});
  EXPECT_THAT(tar_refusal({words}), AllOf(HasSubstr(words.string()), HasSubstr("sample 'k'"),
                                          HasSubstr("label 'cat' is not a decimal number")));
  const auto negative = shard_of(dir, "negative.tar", {{"k.jpg", "A"}, {"k.cls", "-1"}});
  EXPECT_THAT(tar_refusal({negative}), HasSubstr("label '-1' is not a decimal number"));
  const auto empty = shard_of(dir, "empty.tar", {{"k.jpg", "A"}, {"k.cls", ""}});
  EXPECT_THAT(tar_refusal({empty}), HasSubstr("label '' is not a decimal number"));
  const auto huge = shard_of(dir, "huge.tar", {{"k.jpg", "A"}, {"k.cls", "4294967296"}});
  EXPECT_THAT(tar_refusal({huge}),
              HasSubstr("label '4294967296' is out of range (labels are 32-bit)"));
  const auto ten = shard_of(dir, "ten.tar", {{"k.jpg", "A"}, {"k.cls", "10"}});
  EXPECT_THAT(tar_refusal({ten}, {.num_classes = 10}),
              AllOf(HasSubstr("sample 'k'"), HasSubstr("label '10' is out of range (10 classes)")));
  EXPECT_EQ(TarShards({ten}, {.num_classes = 11}).label(0), 10U);
}

TEST(TarShards, RefusesAShardWithoutSamples) {
  TempDir dir;
  const auto meta = shard_of(dir, "meta.tar", {{"readme.txt", "hello"}});
  EXPECT_THAT(tar_refusal({meta}), AllOf(HasSubstr(meta.string()), HasSubstr("holds no sample")));
}

/// A shard of two samples of 300-byte images: headers at 0, 1024, 2048, 3072; data of s1.jpg
/// at 2560; the end blocks at 4096.
Bytes small_shard(const TempDir& dir) {
  return read_file(shard_of(dir, "good.tar",
                            {{"s0.jpg", std::string(300, 'a')},
                             {"s0.cls", "0"},
                             {"s1.jpg", std::string(300, 'b')},
                             {"s1.cls", "1"}}));
}

TEST(TarShards, RefusesTruncatedTarsNamingTheOffset) {
  TempDir dir;
  const Bytes good = small_shard(dir);
  ASSERT_EQ(TarShards({dir / "good.tar"}).size(), 2U);
  const auto cut = [&](std::size_t size) {
    const auto path = dir / ("cut-" + std::to_string(size) + ".tar");
    write_file(path, Bytes(good.begin(), good.begin() + static_cast<long>(size)));
    return tar_refusal({path});
  };
  EXPECT_THAT(cut(2048 + 100), AllOf(HasSubstr("cut-2148.tar"), HasSubstr("header at offset 2048"),
                                     HasSubstr("truncated header: 100 of 512 bytes")));
  EXPECT_THAT(cut(2560 + 10), AllOf(HasSubstr("header at offset 2048"),
                                    HasSubstr("300 bytes of data run past the end of the file")));
  EXPECT_THAT(cut(4096), AllOf(HasSubstr("header at offset 4096"),
                               HasSubstr("ends without the end-of-archive blocks")));
  EXPECT_THAT(cut(0), HasSubstr("header at offset 0"));
  // One zero block then the end of the file is an end, as for GNU tar and Python.
  write_file(dir / "one-zero.tar", Bytes(good.begin(), good.begin() + 4096 + 512));
  EXPECT_EQ(TarShards({dir / "one-zero.tar"}).size(), 2U);
}

TEST(TarShards, RefusesABadChecksumNamingTheOffset) {
  TempDir dir;
  Bytes tar = small_shard(dir);
  tar[1024 + 1] ^= 0x01;  // the name of s0.cls's header
  write_file(dir / "bad.tar", tar);
  EXPECT_THAT(tar_refusal({dir / "bad.tar"}),
              AllOf(HasSubstr("bad.tar"), HasSubstr("header at offset 1024"),
                    HasSubstr("header checksum mismatch")));
  Bytes noise(4096);
  for (std::size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<std::uint8_t>(i * 31 + 7);
  write_file(dir / "noise.tar", noise);
  EXPECT_THAT(tar_refusal({dir / "noise.tar"}), HasSubstr("header at offset 0"));
}

TEST(TarShards, RefusesAMemberPastTheEndOfTheFileNamingTheOffset) {
  TempDir dir;
  Bytes tar = small_shard(dir);
  std::snprintf(reinterpret_cast<char*>(tar.data() + 2048 + 124), 12, "%011o", 99999U);
  set_checksum(tar, 2048);
  write_file(dir / "past.tar", tar);
  EXPECT_THAT(tar_refusal({dir / "past.tar"}),
              AllOf(HasSubstr("past.tar"), HasSubstr("header at offset 2048"),
                    HasSubstr("99999 bytes of data run past the end of the file")));
  // A base-256 size field is read as such (here: 2^32, too large as well).
  std::memset(tar.data() + 2048 + 124, 0, 12);
  tar[2048 + 124] = 0x80;
  tar[2048 + 131] = 0x01;
  set_checksum(tar, 2048);
  write_file(dir / "past256.tar", tar);
  EXPECT_THAT(tar_refusal({dir / "past256.tar"}),
              AllOf(HasSubstr("header at offset 2048"),
                    HasSubstr("4294967296 bytes of data run past the end of the file")));
  // One beyond 64 bits is no number.
  std::memset(tar.data() + 2048 + 125, 0xff, 11);
  set_checksum(tar, 2048);
  write_file(dir / "past256.tar", tar);
  EXPECT_THAT(
      tar_refusal({dir / "past256.tar"}),
      AllOf(HasSubstr("header at offset 2048"), HasSubstr("is not an octal or base-256 number")));
}

TEST(TarShards, ReadsPaxPathAndSizeAndBase256Sizes) {
  TempDir dir;
  Bytes tar;
  const std::string pax =
      pax_record("path", "deep/dir/k.jpg") + pax_record("size", "5") + pax_record("mtime", "1.5");
  append_member(tar, "PaxHeaders/k", 'x', pax.size(), as_bytes(pax));
  append_member(tar, "truncated-name", '0', 0, as_bytes("IMAGE"));  // size 0, pax says 5
  append_member(tar, "deep/dir/k.cls", '0', 1, as_bytes("4"));
  // A member whose size is in base-256.
  append_member(tar, "deep/dir/m.jpg", '0', 0, as_bytes("MM"));
  const std::size_t m = tar.size() - 1024;
  std::memset(tar.data() + m + 124, 0, 12);
  tar[m + 124] = 0x80;
  tar[m + 135] = 2;
  set_checksum(tar, m);
  append_member(tar, "deep/dir/m.cls", '0', 1, as_bytes("3"));
  append_end(tar);
  write_file(dir / "pax.tar", tar);
  const TarShards shards({dir / "pax.tar"});
  ASSERT_EQ(shards.size(), 2U);
  EXPECT_EQ(shards.key(0), "deep/dir/k");
  EXPECT_EQ(std::string(shards.get(0).bytes.begin(), shards.get(0).bytes.end()), "IMAGE");
  EXPECT_EQ(shards.label(0), 4U);
  EXPECT_EQ(std::string(shards.get(1).bytes.begin(), shards.get(1).bytes.end()), "MM");
  EXPECT_EQ(shards.label(1), 3U);
}

TEST(TarShards, RefusesMalformedPaxAndLongNameEntriesNamingTheOffset) {
  TempDir dir;
  Bytes pax;
  append_member(pax, "a.jpg", '0', 1, as_bytes("A"));
  append_member(pax, "PaxHeaders/x", 'x', 12, as_bytes("99 path=x\n\0\0"));
  append_member(pax, "x.jpg", '0', 1, as_bytes("X"));
  append_end(pax);
  write_file(dir / "pax.tar", pax);
  EXPECT_THAT(tar_refusal({dir / "pax.tar"}),
              AllOf(HasSubstr("header at offset 1024"), HasSubstr("no valid length")));
  Bytes dangling;
  append_member(dangling, "a.jpg", '0', 1, as_bytes("A"));
  append_member(dangling, "././@LongLink", 'L', 6, as_bytes("b.jpg"));
  append_end(dangling);
  write_file(dir / "dangling.tar", dangling);
  EXPECT_THAT(tar_refusal({dir / "dangling.tar"}),
              AllOf(HasSubstr("header at offset 1024"), HasSubstr("that no member follows")));
  Bytes huge_name;
  append_member(huge_name, "././@LongLink", 'L', 70000, Bytes(70000, 'n'));
  append_member(huge_name, "n.jpg", '0', 1, as_bytes("N"));
  append_end(huge_name);
  write_file(dir / "huge-name.tar", huge_name);
  EXPECT_THAT(tar_refusal({dir / "huge-name.tar"}),
              AllOf(HasSubstr("header at offset 0"), HasSubstr("a GNU long name of 70000 bytes")));
}

// --- tars written by Python's tarfile ---------------------------------------------------------

constexpr const char* tarfile_script = R"PY(
import io, sys, tarfile

def payload(i, n):
    return bytes((i >> (8 * j)) & 255 if j < 4 else (i * 7 + j * 13) % 256 for j in range(n))

def add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))

formats = {
    "gnu": (tarfile.GNU_FORMAT, "train/" + "long_directory_name_" * 6 + "/sample"),
    "pax": (tarfile.PAX_FORMAT, "val/caf\u00e9_" + "p" * 110 + "/sample"),
    "ustar": (tarfile.USTAR_FORMAT, "test/" + "u" * 90 + "/sample"),
}
for name, (fmt, prefix) in formats.items():
    extra = {"pax_headers": {"comment": "a global header"}} if fmt == tarfile.PAX_FORMAT else {}
    with tarfile.open(sys.argv[1] + "/" + name + ".tar", "w", format=fmt, **extra) as tar:
        folder = tarfile.TarInfo(prefix.rsplit("/", 1)[0])
        folder.type = tarfile.DIRTYPE
        folder.mode = 0o755
        tar.addfile(folder)
        for i in range(5):
            key = "%s%03d" % (prefix, i)
            add(tar, key + ".jpg", payload(i, 100 + 700 * i))
            add(tar, key + ".json", b"{}")
            add(tar, key + ".cls", b"%d\n" % (i % 3))
)PY";

class PythonTars : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string python = STOKE_TEST_PYTHON;
    if (python.empty()) GTEST_SKIP() << "no Python interpreter (STOKE_PYTHON) to write tars";
    std::ofstream(dir_ / "write_tars.py") << tarfile_script;
    const std::string command = "'" + python + "' '" + (dir_ / "write_tars.py").string() + "' '" +
                                dir_.path().string() + "'";
    const int status = std::system(command.c_str());
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << command << " failed with status " << status;
  }

  /// Expects the shard `name` to hold the script's five samples with keys `prefix<i>`.
  void expect_samples(const std::string& name, const std::string& prefix) const {
    const TarShards shards({dir_ / name});
    ASSERT_EQ(shards.size(), 5U) << name;
    for (std::size_t i = 0; i < 5; ++i) {
      char number[8];
      std::snprintf(number, sizeof(number), "%03zu", i);
      EXPECT_EQ(shards.key(i), prefix + number) << name;
      EXPECT_EQ(shards.label(i), i % 3) << name;
      EXPECT_TRUE(std::ranges::equal(shards.get(i).bytes, payload(i, 100 + 700 * i)))
          << name << " sample " << i;
    }
  }

  TempDir dir_;
};

TEST_F(PythonTars, ReadsGnuTarsWithLongNames) {
  expect_samples(
      "gnu.tar", "train/" + [] {
        std::string s;
        for (int i = 0; i < 6; ++i) s += "long_directory_name_";
        return s;
      }() + "/sample");
}

TEST_F(PythonTars, ReadsPaxTarsWithGlobalHeadersAndNonAsciiLongPaths) {
  expect_samples("pax.tar", "val/caf\xc3\xa9_" + std::string(110, 'p') + "/sample");
}

TEST_F(PythonTars, ReadsUstarTarsWithPrefixedNames) {
  expect_samples("ustar.tar", "test/" + std::string(90, 'u') + "/sample");
}

// --- loaders ----------------------------------------------------------------------------------

/// The ids of a batch of images.
struct ImageIds {
  template <class Device>
  stoke::testing::ItemsBatch<Device> batch(std::vector<EncodedImage> images,
                                           const Device& device) const {
    std::vector<std::size_t> out;
    for (const auto& image : images) out.push_back(id_of(image));
    return {std::move(out), device};
  }
};

/// Five shards of 7, 3, 9, 5 and 6 samples, ids counting up across them.
TarShards five_shards(const TempDir& dir) {
  std::vector<std::filesystem::path> files;
  std::size_t first = 0;
  for (const std::size_t count : {7, 3, 9, 5, 6}) {
    files.push_back(
        write_shard(dir / ("shard-" + std::to_string(files.size()) + ".tar"), first, count));
    first += count;
  }
  return TarShards(files, {.read_ahead_shards = 1});
}

TEST(TarShards, AShardAwareLoaderVisitsEachSampleOncePerEpochShardByShard) {
  TempDir dir;
  const TarShards shards = five_shards(dir);
  static_assert(stoke::ReadAheadShardedDataset<TarShards>);
  auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, ImageIds>({})
                    .batch_size(4)
                    .shuffle_shards(11)
                    .num_workers(2)
                    .build(shards);
  std::vector<std::size_t> all(shards.size());
  std::iota(all.begin(), all.end(), 0);
  std::vector<std::vector<std::size_t>> orders;
  for (int epoch = 0; epoch < 2; ++epoch) {
    const std::vector<std::size_t> seen = stoke::testing::epoch_items(loader);
    // Shard by shard: the shard changes at most (shards - 1) times along the epoch.
    std::size_t changes = 0;
    for (std::size_t p = 1; p < seen.size(); ++p) {
      const auto shard = [&](std::size_t id) {
        const auto& begins = shards.shard_begins();
        return std::upper_bound(begins.begin(), begins.end(), id) - begins.begin();
      };
      changes += shard(seen[p]) != shard(seen[p - 1]) ? 1 : 0;
    }
    EXPECT_EQ(changes, 4U) << "epoch " << epoch;
    orders.push_back(seen);
    std::vector<std::size_t> sorted = seen;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, all) << "epoch " << epoch;
    EXPECT_EQ(shards.prefetched_shards().size(), 5U) << "every shard advised, epoch " << epoch;
  }
  EXPECT_NE(orders[0], orders[1]) << "each epoch has an order of its own";
}

TEST(TarShards, TheShardRankSplitGivesEachRankWholeShards) {
  TempDir dir;
  const TarShards shards = five_shards(dir);
  auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, ImageIds>({})
                    .batch_size(3)
                    .shuffle_shards(5)
                    .remainder(stoke::Remainder::pad)
                    .build_batch_loader(shards);
  std::vector<std::size_t> together;
  for (std::size_t rank = 0; rank < 2; ++rank) {
    auto part = stoke::rank_share(loader, rank, 2, stoke::RankSplit::by_shards);
    std::set<std::size_t> mine;
    for (auto& batch : part.iter()) {
      const auto& items = batch.data.items;
      mine.insert(items.begin(), items.end() - static_cast<long>(batch.padding));
    }
    together.insert(together.end(), mine.begin(), mine.end());
    for (std::size_t k = 0; k < 5; ++k) {
      const std::size_t begin = shards.shard_begins()[k];
      const std::size_t end = k + 1 < 5 ? shards.shard_begins()[k + 1] : shards.size();
      const auto held = static_cast<std::size_t>(std::count_if(
          mine.begin(), mine.end(), [&](std::size_t id) { return id >= begin && id < end; }));
      EXPECT_TRUE(held == 0 || held == end - begin) << "rank " << rank << " shard " << k;
    }
  }
  std::sort(together.begin(), together.end());
  std::vector<std::size_t> all(shards.size());
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(together, all);
}

TEST(TarShards, PrefetchAdvisesTheNextShardsInPlanOrderAsReadingReachesThem) {
  TempDir dir;
  const TarShards shards = five_shards(dir);  // read_ahead_shards = 1
  EXPECT_TRUE(shards.prefetched_shards().empty());
  const std::vector<std::size_t> plan{3, 0, 4, 1, 2};
  shards.read_ahead(plan);
  EXPECT_EQ(shards.prefetched_shards(), (std::vector<std::size_t>{3}));
  (void)shards.get(shards.shard_begins()[3]);  // reading shard 3 advises the next one
  EXPECT_EQ(shards.prefetched_shards(), (std::vector<std::size_t>{3, 0}));
  (void)shards.get(shards.shard_begins()[3] + 1);
  EXPECT_EQ(shards.prefetched_shards(), (std::vector<std::size_t>{3, 0}));
  (void)shards.get(shards.shard_begins()[4]);  // a shard further on: everything up to it
  EXPECT_EQ(shards.prefetched_shards(), (std::vector<std::size_t>{3, 0, 4, 1}));
  shards.read_ahead(std::vector<std::size_t>{2, 99});  // a new epoch; 99 is ignored
  EXPECT_EQ(shards.prefetched_shards(), (std::vector<std::size_t>{2}));
}

}  // namespace
