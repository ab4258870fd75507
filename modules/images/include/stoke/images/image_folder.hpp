#pragma once
/// @file
/// `ImageFolder`: the images of a directory tree laid out as torchvision's `ImageFolder`
/// (`root/<class>/<file>`), a dataset of `EncodedImage`.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/check_index.hpp>
#include <stoke/images/image.hpp>

namespace stoke::images {
namespace detail {

/// `text` in lower case, with a leading dot (`"JPG"` and `".jpg"` give `".jpg"`).
inline std::string dotted_lower_extension(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (text.empty() || text.front() != '.') text.insert(text.begin(), '.');
  return text;
}

/// A file's bytes and the buffer that owns them.
struct FileBytes {
  std::span<const std::uint8_t> bytes;  ///< the file
  std::shared_ptr<const void> storage;  ///< owns `bytes`
};

/// The whole file `path` in a buffer of its own (not zeroed first), read with one `pread`
/// loop; throws `InputError` naming the path and the system's reason (`what` says which sample
/// it is).
inline FileBytes read_whole_file(const std::filesystem::path& path, const std::string& what) {
  const auto fail = [&](const std::string& reason) {
    throw InputError("stoke: ImageFolder: cannot read " + what + " '" + path.string() +
                     "': " + reason);
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    fail(error == ENOENT ? "it vanished since the folder was listed (" +
                               std::generic_category().message(error) + ")"
                         : std::generic_category().message(error));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat info{};
  if (::fstat(fd, &info) != 0) fail(std::generic_category().message(errno));
  if (!S_ISREG(info.st_mode)) fail("not a regular file");
  const auto size = static_cast<std::size_t>(info.st_size);
  std::shared_ptr<std::uint8_t[]> buffer = std::make_shared_for_overwrite<std::uint8_t[]>(size);
  for (std::size_t done = 0; done < size;) {
    const ::ssize_t got = ::pread(fd, buffer.get() + done, size - done, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(std::generic_category().message(errno));
    if (got == 0) {
      fail("it shrank to " + std::to_string(done) + " bytes while read (" + std::to_string(size) +
           " when opened)");
    }
    done += static_cast<std::size_t>(got);
  }
  const std::span<const std::uint8_t> bytes(buffer.get(), size);
  return {bytes, std::move(buffer)};
}

}  // namespace detail

/// The images of a folder tree in torchvision's `ImageFolder` layout: `root/<class>/<file>`.
///
/// - The classes are the names of `root`'s sub-folders, sorted (byte order); the label of an
///   image is its class's position. A class folder without images keeps its place (the labels
///   stay those of torchvision's `class_to_idx`).
/// - The images of a class are the regular files anywhere below its folder (sub-folders
///   included; folder links are not followed) whose extension is one of `extensions`,
///   compared without regard to case; files with other extensions, and files directly in
///   `root`, are ignored. Within a class they are sorted by path.
/// - Opening lists the tree once; `get` reads the file then, whole, into a buffer the returned
///   `EncodedImage` owns. Copies of the dataset share the listing.
class ImageFolder {
 public:
  /// Lists `root`. Throws `InputError` naming `root` when it is missing, not a folder, cannot
  /// be listed, has no class folder, or none of its class folders holds an image.
  explicit ImageFolder(std::filesystem::path root,
                       std::vector<std::string> extensions = {".jpg", ".jpeg", ".png"})
      : shared_(std::make_shared<Shared>()) {
    Shared& s = *shared_;
    s.root = std::move(root);
    for (auto& extension : extensions) {
      s.extensions.push_back(detail::dotted_lower_extension(std::move(extension)));
    }
    const std::string where = "stoke: ImageFolder '" + s.root.string() + "'";
    std::error_code error;
    const auto status = std::filesystem::status(s.root, error);
    if (error || !std::filesystem::exists(status)) {
      throw InputError(where + " does not exist" + (error ? ": " + error.message() : ""));
    }
    if (!std::filesystem::is_directory(status)) throw InputError(where + " is not a folder");
    std::vector<std::filesystem::path> class_folders;
    for (std::filesystem::directory_iterator it(s.root, error), end; !error && it != end;
         it.increment(error)) {
      std::error_code ignored;
      if (it->is_directory(ignored)) class_folders.push_back(it->path());
    }
    if (error) throw InputError(where + " cannot be listed: " + error.message());
    if (class_folders.empty()) {
      throw InputError(where + " has no class folder (expected root/<class>/<image>)");
    }
    std::sort(class_folders.begin(), class_folders.end());
    for (std::size_t label = 0; label < class_folders.size(); ++label) {
      s.classes.push_back(class_folders[label].filename().string());
      std::vector<std::filesystem::path> images;
      for (std::filesystem::recursive_directory_iterator it(class_folders[label], error), end;
           !error && it != end; it.increment(error)) {
        std::error_code ignored;
        if (it->is_regular_file(ignored) && wanted(it->path())) images.push_back(it->path());
      }
      if (error) {
        throw InputError(where + ": class folder '" + class_folders[label].string() +
                         "' cannot be listed: " + error.message());
      }
      std::sort(images.begin(), images.end());
      for (auto& image : images) {
        s.paths.push_back(std::move(image));
        s.labels.push_back(static_cast<std::uint32_t>(label));
      }
    }
    if (s.paths.empty()) {
      std::string wanted_list;
      for (const auto& e : s.extensions) wanted_list += (wanted_list.empty() ? "" : ", ") + e;
      throw InputError(where + " holds no image: none of its " + std::to_string(s.classes.size()) +
                       " class folders has a file ending in " + wanted_list);
    }
  }

  /// Images in all classes.
  [[nodiscard]] std::size_t size() const noexcept { return shared_->paths.size(); }

  /// Image `index`: the file's bytes, its label and its path as source. Throws `UsageError`
  /// when out of range, and `InputError` naming the path and the reason when the file cannot
  /// be read (it vanished, it is unreadable, it shrank while read).
  [[nodiscard]] EncodedImage get(std::size_t index) const {
    stoke::check_index(index, size(), "ImageFolder");
    const std::filesystem::path& file = shared_->paths[index];
    detail::FileBytes read = detail::read_whole_file(file, "image " + std::to_string(index));
    return {.bytes = read.bytes,
            .storage = std::move(read.storage),
            .label = shared_->labels[index],
            .source = file.string()};
  }

  /// The class names, sorted: `classes()[label]`.
  [[nodiscard]] const std::vector<std::string>& classes() const noexcept {
    return shared_->classes;
  }

  /// The path of image `index`; throws `UsageError` when out of range.
  [[nodiscard]] const std::filesystem::path& path(std::size_t index) const {
    stoke::check_index(index, size(), "ImageFolder");
    return shared_->paths[index];
  }

  /// The label of image `index`, without reading it; throws `UsageError` when out of range.
  [[nodiscard]] std::uint32_t label(std::size_t index) const {
    stoke::check_index(index, size(), "ImageFolder");
    return shared_->labels[index];
  }

  /// The folder.
  [[nodiscard]] const std::filesystem::path& root() const noexcept { return shared_->root; }

 private:
  struct Shared {
    std::filesystem::path root;
    std::vector<std::string> extensions;  // lower case, with the dot
    std::vector<std::string> classes;
    std::vector<std::filesystem::path> paths;
    std::vector<std::uint32_t> labels;
  };

  /// Whether `file`'s extension is one of the wanted ones.
  [[nodiscard]] bool wanted(const std::filesystem::path& file) const {
    const std::string extension = detail::dotted_lower_extension(file.extension().string());
    const auto& list = shared_->extensions;
    return file.has_extension() && std::find(list.begin(), list.end(), extension) != list.end();
  }

  std::shared_ptr<Shared> shared_;
};

}  // namespace stoke::images
