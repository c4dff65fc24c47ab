#pragma once
// The fuzz input as a file of this process (the readers under test take paths), rewritten for
// each input.

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace inferscale::fuzz {

inline std::string input_file(const char* suffix, const std::uint8_t* data, std::size_t size) {
  // In memory where the system has a tmpfs: on a disk-backed /tmp, writing the file took ten
  // times as long as reading it twice.
  static const std::filesystem::path dir = std::filesystem::is_directory("/dev/shm")
                                               ? std::filesystem::path("/dev/shm")
                                               : std::filesystem::temp_directory_path();
  static const std::string path =
      (dir / ("inferscale_fuzz_" + std::to_string(::getpid()) + suffix)).string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace inferscale::fuzz
