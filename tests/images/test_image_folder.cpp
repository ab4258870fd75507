// ImageFolder: torchvision's root/<class>/<file> layout (classes, labels, order), the files it
// ignores, and the errors it raises naming the folder or the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <stoke/images/image_folder.hpp>
#include <stoke/stoke.hpp>

#include "stoke_test_files.hpp"

namespace {

using stoke::images::EncodedImage;
using stoke::images::ImageFolder;
using stoke::testing::message_of;
using stoke::testing::TempDir;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

/// Writes `content` to `root/relative`, creating the folders on the way.
void put(const std::filesystem::path& root, const std::string& relative,
         const std::string& content) {
  const auto file = root / relative;
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << content;
}

std::string text_of(const EncodedImage& image) {
  return {image.bytes.begin(), image.bytes.end()};
}

std::string folder_refusal(const std::filesystem::path& root) {
  return message_of<stoke::InputError>([&] { (void)ImageFolder(root); });
}

TEST(ImageFolder, ClassesAreTheSortedFoldersAndLabelsTheirPositions) {
  TempDir dir;
  put(dir.path(), "dog/b.jpg", "dog-b");
  put(dir.path(), "dog/a.png", "dog-a");
  put(dir.path(), "cat/z.jpeg", "cat-z");
  put(dir.path(), "cat/nested/m.jpg", "cat-nested-m");
  put(dir.path(), "bird/1.jpg", "bird-1");
  std::filesystem::create_directories(dir / "empty");  // keeps its place among the labels
  put(dir.path(), "zebra/0.jpg", "zebra-0");
  const ImageFolder folder(dir.path());
  EXPECT_THAT(folder.classes(), ElementsAre("bird", "cat", "dog", "empty", "zebra"));
  ASSERT_EQ(folder.size(), 6U);
  const std::vector<std::string> contents{"bird-1", "cat-nested-m", "cat-z",
                                          "dog-a",  "dog-b",        "zebra-0"};
  const std::vector<std::uint32_t> labels{0, 1, 1, 2, 2, 4};
  for (std::size_t i = 0; i < folder.size(); ++i) {
    const EncodedImage image = folder.get(i);
    EXPECT_EQ(text_of(image), contents[i]) << i;
    EXPECT_EQ(image.label, labels[i]) << i;
    EXPECT_EQ(folder.label(i), labels[i]) << i;
    EXPECT_EQ(image.source, folder.path(i).string());
    EXPECT_TRUE(image.storage != nullptr);
  }
  EXPECT_EQ(folder.path(1), dir / "cat/nested/m.jpg");
  EXPECT_EQ(folder.root(), dir.path());
  EXPECT_THROW((void)folder.get(6), stoke::UsageError);
  EXPECT_THROW((void)folder.path(6), stoke::UsageError);
}

TEST(ImageFolder, IgnoresOtherExtensionsAndRootFilesAndMatchesWithoutCase) {
  TempDir dir;
  put(dir.path(), "a/one.JPG", "1");
  put(dir.path(), "a/two.Png", "2");
  put(dir.path(), "a/notes.txt", "ignored");
  put(dir.path(), "a/jpg", "no extension: ignored");
  put(dir.path(), "a/archive.jpg.gz", "ignored");
  put(dir.path(), "b/three.jpeg", "3");
  put(dir.path(), "stray.jpg", "a file in root: ignored");
  const ImageFolder folder(dir.path());
  ASSERT_EQ(folder.size(), 3U);
  EXPECT_EQ(folder.path(0).filename(), "one.JPG");
  EXPECT_EQ(folder.path(1).filename(), "two.Png");
  EXPECT_EQ(folder.path(2).filename(), "three.jpeg");
  // Extensions of one's own, with or without the dot.
  const ImageFolder text(dir.path(), {"TXT", ".gz"});
  ASSERT_EQ(text.size(), 2U);
  EXPECT_EQ(text_of(text.get(0)), "ignored");
  EXPECT_EQ(text.path(1).filename(), "notes.txt");
}

TEST(ImageFolder, AnImageOutlivesTheDataset) {
  TempDir dir;
  put(dir.path(), "c/x.png", std::string(5000, 'x'));
  EncodedImage image;
  {
    const ImageFolder folder(dir.path());
    image = folder.get(0);
  }
  EXPECT_EQ(text_of(image), std::string(5000, 'x'));
}

TEST(ImageFolder, RefusesAMissingRootOrAFileNamingIt) {
  TempDir dir;
  EXPECT_THAT(folder_refusal(dir / "missing"),
              AllOf(HasSubstr((dir / "missing").string()), HasSubstr("does not exist")));
  put(dir.path(), "file.jpg", "x");
  EXPECT_THAT(folder_refusal(dir / "file.jpg"),
              AllOf(HasSubstr((dir / "file.jpg").string()), HasSubstr("is not a folder")));
}

TEST(ImageFolder, RefusesARootWithoutClassFoldersOrImages) {
  TempDir dir;
  put(dir.path(), "loose.jpg", "x");
  EXPECT_THAT(folder_refusal(dir.path()),
              AllOf(HasSubstr(dir.path().string()), HasSubstr("has no class folder")));
  put(dir.path(), "a/readme.txt", "x");
  std::filesystem::create_directories(dir / "b");
  EXPECT_THAT(folder_refusal(dir.path()),
              AllOf(HasSubstr(dir.path().string()),
                    HasSubstr("holds no image: none of its 2 class folders has a file ending in "
                              ".jpg, .jpeg, .png")));
}

TEST(ImageFolder, RefusesAFileThatVanishedOrCannotBeReadNamingItAndTheReason) {
  TempDir dir;
  put(dir.path(), "a/0.jpg", "zero");
  put(dir.path(), "a/1.jpg", "one");
  put(dir.path(), "a/2.jpg", "two");
  const ImageFolder folder(dir.path());
  std::filesystem::remove(dir / "a/1.jpg");
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)folder.get(1); }),
              AllOf(HasSubstr("image 1"), HasSubstr((dir / "a/1.jpg").string()),
                    HasSubstr("vanished"), HasSubstr("No such file or directory")));
  // A link to itself: open fails with ELOOP, whoever runs the test (root reads mode 000 files).
  std::filesystem::remove(dir / "a/2.jpg");
  std::filesystem::create_symlink(dir / "a/2.jpg", dir / "a/2.jpg");
  EXPECT_THAT(
      message_of<stoke::InputError>([&] { (void)folder.get(2); }),
      AllOf(HasSubstr((dir / "a/2.jpg").string()), HasSubstr("Too many levels of symbolic links")));
  std::filesystem::remove(dir / "a/0.jpg");
  std::filesystem::create_directories(dir / "a/0.jpg");
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)folder.get(0); }),
              AllOf(HasSubstr((dir / "a/0.jpg").string()), HasSubstr("not a regular file")));
}

}  // namespace
