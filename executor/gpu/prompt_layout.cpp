#include "executor/gpu/prompt_layout.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace inferscale {

namespace {

[[noreturn]] void bad_plan(const PrefillItem& item, const std::string& what) {
  throw std::invalid_argument("plan: request " + std::to_string(item.request) + ": " + what);
}

}  // namespace

std::vector<PromptPiece> compose_prompt(const PrefillItem& item,
                                        const std::vector<PromptFact>& prompt_facts) {
  if (item.facts_begin > item.facts_end || item.facts_end > prompt_facts.size()) {
    bad_plan(item, "fact range outside prompt_facts");
  }
  std::vector<PromptPiece> pieces;
  if (item.header_tokens > 0) {
    PromptPiece h;
    h.kind = PromptPiece::Kind::kHeader;
    h.tokens = item.header_tokens;
    h.computed = !item.header_cached;
    h.injected = item.header_cached;
    pieces.push_back(h);
  }
  std::vector<PromptFact> facts(prompt_facts.begin() + item.facts_begin,
                                prompt_facts.begin() + item.facts_end);
  std::stable_sort(facts.begin(), facts.end(), [](const PromptFact& a, const PromptFact& b) {
    return a.position < b.position;
  });
  for (const PromptFact& f : facts) {
    if (f.tokens == 0) continue;
    PromptPiece p;
    p.kind = PromptPiece::Kind::kFact;
    p.position = f.position;
    p.tokens = f.tokens;
    p.fact = f.fact;
    p.computed = !f.inject && !f.private_kv;
    p.injected = f.inject && !f.private_kv;
    pieces.push_back(p);
  }
  std::uint32_t end = item.header_tokens;
  for (const PromptPiece& p : pieces) {
    if (p.kind != PromptPiece::Kind::kFact) continue;
    if (p.position != end) {
      bad_plan(item, "composed positions are not contiguous: fact " + std::to_string(p.fact) +
                         " at " + std::to_string(p.position) + ", expected " + std::to_string(end));
    }
    end += p.tokens;
  }
  for (auto [kind, n] : {std::pair{PromptPiece::Kind::kFooter, item.footer_tokens},
                         std::pair{PromptPiece::Kind::kQuery, item.query_tokens}}) {
    if (n == 0) continue;
    PromptPiece p;
    p.kind = kind;
    p.position = end;
    p.tokens = n;
    p.computed = true;
    pieces.push_back(p);
    end += n;
  }
  if (end != item.prompt_tokens) {
    bad_plan(item, "pieces cover " + std::to_string(end) + " positions, prompt_tokens is " +
                       std::to_string(item.prompt_tokens));
  }
  std::uint32_t computed = 0;
  for (const PromptPiece& p : pieces) computed += p.computed ? p.tokens : 0;
  if (computed != item.computed_total) {
    bad_plan(item, "computed pieces hold " + std::to_string(computed) +
                       " tokens, computed_total is " + std::to_string(item.computed_total));
  }
  if (item.computed_done + item.computed_now > item.computed_total) {
    bad_plan(item, "chunk runs past computed_total");
  }
  return pieces;
}

std::vector<ComputedRun> computed_runs(const std::vector<PromptPiece>& pieces, std::uint32_t begin,
                                       std::uint32_t end) {
  std::vector<ComputedRun> runs;
  std::uint32_t index = 0;  // computed-token index of the current piece's first token
  for (std::uint32_t pi = 0; pi < pieces.size() && index < end; ++pi) {
    const PromptPiece& p = pieces[pi];
    if (!p.computed) continue;
    const std::uint32_t lo = std::max(begin, index), hi = std::min(end, index + p.tokens);
    for (std::uint32_t c = lo; c < hi; ++c) {
      const std::uint32_t offset = c - index, position = p.position + offset;
      if (runs.empty() || runs.back().position + runs.back().tokens != position) {
        runs.push_back(ComputedRun{position, 0, {}});
      }
      runs.back().tokens++;
      runs.back().sources.emplace_back(pi, offset);
    }
    index += p.tokens;
  }
  return runs;
}

}  // namespace inferscale
