// Writes the binary trace fuzz target's seed inputs to a folder: each JSONL trace given,
// converted to the binary format, once as its record bytes (selector 0) and once as its
// compressed stream (selector 1); see binary_trace_fuzz.cpp.
#include <zstd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "traces/binary_trace.h"
#include "traces/error.h"

using namespace inferscale;
namespace fs = std::filesystem;

namespace {

void put(const fs::path& path, char selector, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << selector << bytes;
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

/// The bytes a zstd stream decompresses to.
std::string decompress(const std::string& z) {
  ZSTD_DCtx* d = ZSTD_createDCtx();
  std::string out, chunk(ZSTD_DStreamOutSize(), '\0');
  ZSTD_inBuffer in{z.data(), z.size(), 0};
  while (in.pos < in.size) {
    ZSTD_outBuffer o{chunk.data(), chunk.size(), 0};
    const std::size_t rc = ZSTD_decompressStream(d, &o, &in);
    if (ZSTD_isError(rc)) {
      std::fprintf(stderr, "zstd: %s\n", ZSTD_getErrorName(rc));
      std::exit(1);
    }
    out.append(chunk.data(), o.pos);
  }
  ZSTD_freeDCtx(d);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s FOLDER TRACE.jsonl...\n", argv[0]);
    return 2;
  }
  const fs::path dir = argv[1];
  for (int i = 2; i < argc; ++i) {
    const fs::path in = argv[i];
    const fs::path bin = dir / (in.stem().string() + ".bin.tmp");
    try {
      convert_trace(in.string(), bin.string());
    } catch (const InputError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
    std::ifstream f(bin, std::ios::binary);
    std::ostringstream os;
    os << f.rdbuf();
    fs::remove(bin);
    const std::string stream = os.str().substr(kBinaryTraceMagic.size());
    put(dir / (in.stem().string() + "_records"), '\0', decompress(stream));
    put(dir / (in.stem().string() + "_stream"), '\1', stream);
  }
  return 0;
}
