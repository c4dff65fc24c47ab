#pragma once
// @brief Where the eval tests find the real model and LoCoMo (skipped with the reason when
// absent).

#include <cstdlib>
#include <filesystem>
#include <string>

namespace inferscale::test {

inline std::string smollm2_gguf() {
  if (const char* p = std::getenv("INFERSCALE_MODEL_GGUF")) return p;
  return std::string(INFERSCALE_SOURCE_DIR) + "/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

inline std::string locomo_dir() {
  if (const char* p = std::getenv("INFERSCALE_LOCOMO")) return p;
  return std::string(INFERSCALE_SOURCE_DIR) + "/../shared/data/locomo10";
}

}  // namespace inferscale::test
