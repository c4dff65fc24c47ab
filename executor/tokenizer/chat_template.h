#pragma once
// @brief The chat template of ChatML models (SmolLM2, Qwen2): each message is
// "<|im_start|>{role}\n{content}<|im_end|>\n"; a generation prompt adds
// "<|im_start|>assistant\n".

#include <string>
#include <vector>

namespace inferscale {

struct ChatMessage {
  std::string role;  // system, user, assistant
  std::string content;
};

/// The prompt text of `messages` (special tokens written as text; encode with special = true).
std::string chatml_render(const std::vector<ChatMessage>& messages, bool generation_prompt);

/// The pieces of one message: what comes before its content and what comes after.
std::string chatml_open(const std::string& role);
std::string chatml_close();

}  // namespace inferscale
