#include "executor/tokenizer/chat_template.h"

namespace inferscale {

std::string chatml_open(const std::string& role) {
  return "<|im_start|>" + role + "\n";
}

std::string chatml_close() {
  return "<|im_end|>\n";
}

std::string chatml_render(const std::vector<ChatMessage>& messages, bool generation_prompt) {
  std::string out;
  for (const ChatMessage& m : messages) out += chatml_open(m.role) + m.content + chatml_close();
  if (generation_prompt) out += chatml_open("assistant");
  return out;
}

}  // namespace inferscale
