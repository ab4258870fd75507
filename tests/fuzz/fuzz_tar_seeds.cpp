// Writes the seed corpus of fuzz_tar: fuzz_tar_seeds <dir> fills <dir>/tar/ with small valid
// WebDataset shards written by TarWriter (short names, a GNU long name, ignored members).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <stoke/images/tar_writer.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_tar_seeds <directory>\n";
    return 2;
  }
  const std::filesystem::path dir = std::filesystem::path(argv[1]) / "tar";
  std::filesystem::create_directories(dir);
  const auto image = [](std::size_t id, std::size_t size) {
    std::vector<std::uint8_t> out(size);
    for (std::size_t j = 0; j < size; ++j) out[j] = static_cast<std::uint8_t>(id * 7 + j * 13);
    return out;
  };
  {
    stoke::images::TarWriter tar(dir / "two_samples.tar");
    tar.add("a.jpg", image(0, 40));
    tar.add("a.cls", "0");
    tar.add("b.png", image(1, 600));
    tar.add("b.cls", "7\n");
    tar.finish();
  }
  {
    stoke::images::TarWriter tar(dir / "long_name.tar");
    const std::string folder = "class_" + std::string(120, 'x') + "/";
    tar.add(folder + "k.jpeg", image(2, 20));
    tar.add(folder + "k.cls", "3");
    tar.finish();
  }
  {
    stoke::images::TarWriter tar(dir / "ignored_members.tar");
    tar.add("__meta__.json", "{}");
    tar.add("dir/s.json", "{\"w\": 1}");
    tar.add("dir/s.JPG", image(3, 8));
    tar.add("dir/s.cls", "12");
    tar.finish();
  }
  return 0;
}
