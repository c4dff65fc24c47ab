#include "traces/locomo.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "traces/bm25.h"
#include "traces/error.h"
#include "traces/workload.h"

namespace inferscale {

namespace {

using Json = nlohmann::json;

/// Days since 1970-01-01 of a proleptic Gregorian date.
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

/// "session_12" -> 12 (suffix "" ) or "session_12_observation" -> 12 (suffix "_observation").
bool session_number(std::string_view key, std::string_view suffix, int& n) {
  constexpr std::string_view kPrefix = "session_";
  if (key.size() <= kPrefix.size() + suffix.size() || key.substr(0, kPrefix.size()) != kPrefix ||
      key.substr(key.size() - suffix.size()) != suffix) {
    return false;
  }
  const auto digits = key.substr(kPrefix.size(), key.size() - kPrefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 6) return false;
  n = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + (c - '0');
  }
  return true;
}

class Loader {
 public:
  Loader(const std::string& name, LocomoData& out) : name_(name), out_(out) {}

  [[noreturn]] void fail(const std::string& path, const std::string& msg) const {
    throw InputError(name_ + ": " + path, msg);
  }

  const Json& member(const Json& obj, const std::string& path, const char* key) const {
    const auto it = obj.find(key);
    if (it == obj.end()) fail(path, std::string("missing key '") + key + "'");
    return *it;
  }
  std::string string_at(const Json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, std::string("expected a string, got ") + v.type_name());
    return v.get<std::string>();
  }

  void item(const Json& it, const std::string& path, const std::string& default_id) {
    if (!it.is_object())
      fail(path.empty() ? "(top level)" : path, "expected a conversation object");
    const std::string p = path.empty() ? "" : path + ".";
    LocomoConversation c;
    c.id = default_id;
    if (const auto sid = it.find("sample_id"); sid != it.end()) {
      c.id = sid->is_string() ? sid->get<std::string>() : sid->dump();
    }
    const bool nested = it.contains("conversation");
    const Json& conv = nested ? it["conversation"] : it;
    const std::string cp = nested ? p + "conversation." : p;
    if (!conv.is_object()) fail(p + "conversation", "expected an object");
    c.speakers[0] = string_at(member(conv, cp + "speaker_a", "speaker_a"), cp + "speaker_a");
    c.speakers[1] = string_at(member(conv, cp + "speaker_b", "speaker_b"), cp + "speaker_b");
    read_sessions(conv, cp, c);
    const bool nested_obs = it.contains("observation");
    const Json& obs = nested_obs ? it["observation"] : it;
    read_observations(obs, nested_obs ? p + "observation." : p, conv, cp, c);
    read_qa(member(it, p + "qa", "qa"), p + "qa", c);
    out_.conversations.push_back(std::move(c));
  }

 private:
  int speaker_index(const LocomoConversation& c, const std::string& name,
                    const std::string& path) const {
    if (name == c.speakers[0]) return 0;
    if (name == c.speakers[1]) return 1;
    fail(path, "speaker '" + name + "' is neither speaker_a ('" + c.speakers[0] +
                   "') nor speaker_b ('" + c.speakers[1] + "')");
  }

  std::int64_t session_date(const Json& conv, const std::string& cp, int n) const {
    const std::string key = "session_" + std::to_string(n) + "_date_time";
    const auto text = string_at(member(conv, cp + key, key.c_str()), cp + key);
    std::int64_t minutes = 0;
    if (!parse_locomo_date(text, minutes)) {
      fail(cp + key, "expected a date like \"1:56 pm on 8 May, 2023\", got \"" + text + "\"");
    }
    return minutes;
  }

  void read_sessions(const Json& conv, const std::string& cp, LocomoConversation& c) {
    std::vector<int> sessions;
    for (auto it = conv.begin(); it != conv.end(); ++it) {
      int n = 0;
      if (session_number(it.key(), "", n)) sessions.push_back(n);
    }
    std::sort(sessions.begin(), sessions.end());
    bool first = true;
    for (const int n : sessions) {
      const std::string key = "session_" + std::to_string(n);
      const Json& turns = conv[key];
      if (!turns.is_array()) fail(cp + key, "expected a list of turns");
      if (turns.empty()) continue;
      const auto date = session_date(conv, cp, n);
      c.first_date_min = first ? date : std::min(c.first_date_min, date);
      c.last_date_min = first ? date : std::max(c.last_date_min, date);
      first = false;
      for (std::size_t i = 0; i < turns.size(); ++i) {
        const std::string tp = cp + key + "[" + std::to_string(i) + "]";
        const Json& t = turns[i];
        if (!t.is_object()) fail(tp, "expected a turn object");
        LocomoTurn turn;
        turn.speaker =
            speaker_index(c, string_at(member(t, tp, "speaker"), tp + ".speaker"), tp + ".speaker");
        const auto dia = string_at(member(t, tp, "dia_id"), tp + ".dia_id");
        std::vector<DiaKey> keys;
        if (parse_dia_ids(dia, keys) != 0 || keys.size() != 1) {
          fail(tp + ".dia_id", "expected a dia_id like \"D1:3\", got \"" + dia + "\"");
        }
        turn.id = keys[0];
        turn.text = string_at(member(t, tp, "text"), tp + ".text");
        turn.words = 1 + count_words(turn.text);
        c.turns.push_back(turn);
      }
    }
  }

  void read_observations(const Json& obs, const std::string& op, const Json& conv,
                         const std::string& cp, LocomoConversation& c) {
    if (!obs.is_object()) fail(op, "expected an object");
    std::vector<int> sessions;
    for (auto it = obs.begin(); it != obs.end(); ++it) {
      int n = 0;
      if (session_number(it.key(), "_observation", n)) sessions.push_back(n);
    }
    std::sort(sessions.begin(), sessions.end());
    // The first turn of each session anchors facts whose sources name no turn.
    for (const int n : sessions) {
      const std::string key = "session_" + std::to_string(n) + "_observation";
      const Json& by_speaker = obs[key];
      if (!by_speaker.is_object()) fail(op + key, "expected an object {speaker: [[fact, dia_id]]}");
      const auto date = session_date(conv, cp, n);
      std::uint32_t session_start = 0;
      for (std::uint32_t i = 0; i < c.turns.size(); ++i) {
        if ((c.turns[i].id >> 32) == static_cast<DiaKey>(n)) {
          session_start = i;
          break;
        }
      }
      for (int s = 0; s < 2; ++s) {
        const auto list = by_speaker.find(c.speakers[s]);
        if (list == by_speaker.end()) continue;
        const std::string lp = op + key + "." + c.speakers[s];
        if (!list->is_array()) fail(lp, "expected a list of [fact, dia_id] pairs");
        for (std::size_t i = 0; i < list->size(); ++i) {
          const std::string fp = lp + "[" + std::to_string(i) + "]";
          const Json& pair = (*list)[i];
          if (!pair.is_array() || pair.size() != 2) fail(fp, "expected a [fact, dia_id] pair");
          LocomoFact f;
          f.text = string_at(pair[0], fp + "[0]");
          f.words = count_words(f.text);
          f.session = n;
          f.date_min = date;
          const Json& src = pair[1];
          std::size_t bad = 0;
          if (src.is_string()) {
            bad = parse_dia_ids(src.get<std::string>(), f.sources);
          } else if (src.is_array()) {
            for (std::size_t j = 0; j < src.size(); ++j) {
              bad += parse_dia_ids(string_at(src[j], fp + "[1][" + std::to_string(j) + "]"),
                                   f.sources);
            }
          } else {
            fail(fp + "[1]", "expected a dia_id or a list of dia_ids");
          }
          if (bad != 0 || f.sources.empty()) fail(fp + "[1]", "expected dia_ids like \"D1:3\"");
          std::int64_t anchor = -1;
          for (const DiaKey k : f.sources) {
            if (!f.source.empty()) f.source += ',';
            f.source += dia_id_string(k);
            anchor = std::max(anchor, c.turn_position(k));
          }
          f.anchor_turn = anchor >= 0 ? static_cast<std::uint32_t>(anchor) : session_start;
          c.facts[s].push_back(std::move(f));
        }
      }
      for (auto it = by_speaker.begin(); it != by_speaker.end(); ++it) {
        speaker_index(c, it.key(), op + key + "." + it.key());
      }
    }
  }

  void read_qa(const Json& qa, const std::string& qp, LocomoConversation& c) {
    if (!qa.is_array()) fail(qp, "expected a list of questions");
    for (std::size_t i = 0; i < qa.size(); ++i) {
      const std::string p = qp + "[" + std::to_string(i) + "]";
      const Json& q = qa[i];
      if (!q.is_object()) fail(p, "expected a question object");
      LocomoQa item;
      item.question = string_at(member(q, p, "question"), p + ".question");
      const Json& cat = member(q, p, "category");
      if (!cat.is_number_integer() || cat.get<int>() < 1 || cat.get<int>() > 5) {
        fail(p + ".category", "expected an integer in [1, 5], got " + cat.dump());
      }
      item.category = cat.get<int>();
      if (const auto a = q.find("answer"); a != q.end()) {
        item.answer = a->is_string() ? a->get<std::string>() : a->dump();
      }
      if (const auto ev = q.find("evidence"); ev != q.end()) {
        if (!ev->is_array()) fail(p + ".evidence", "expected a list of dia_ids");
        for (std::size_t j = 0; j < ev->size(); ++j) {
          out_.dropped_evidence += parse_dia_ids(
              string_at((*ev)[j], p + ".evidence[" + std::to_string(j) + "]"), item.evidence);
        }
      }
      item.speaker = locomo_question_speaker(c, item.evidence, item.question);
      c.qa.push_back(std::move(item));
    }
  }

  std::string name_;
  LocomoData& out_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::int64_t LocomoConversation::turn_position(DiaKey id) const {
  for (std::size_t i = 0; i < turns.size(); ++i) {
    if (turns[i].id == id) return static_cast<std::int64_t>(i);
  }
  return -1;
}

std::size_t LocomoData::facts() const {
  std::size_t n = 0;
  for (const auto& c : conversations) n += c.facts[0].size() + c.facts[1].size();
  return n;
}

std::size_t LocomoData::questions() const {
  std::size_t n = 0;
  for (const auto& c : conversations) n += c.qa.size();
  return n;
}

bool parse_locomo_date(std::string_view s, std::int64_t& minutes) {
  // h:mm (am|pm) on D Month, YYYY
  std::size_t p = 0;
  auto number = [&](int max_digits, int& out) {
    const std::size_t start = p;
    out = 0;
    while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p])) &&
           static_cast<int>(p - start) < max_digits) {
      out = out * 10 + (s[p++] - '0');
    }
    return p > start;
  };
  auto skip_spaces = [&] {
    while (p < s.size() && s[p] == ' ') ++p;
  };
  auto word = [&] {
    const std::size_t start = p;
    while (p < s.size() && std::isalpha(static_cast<unsigned char>(s[p]))) ++p;
    std::string w(s.substr(start, p - start));
    for (auto& ch : w) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return w;
  };
  int hour = 0, minute = 0, day = 0, year = 0;
  skip_spaces();
  if (!number(2, hour) || p >= s.size() || s[p++] != ':' || !number(2, minute)) return false;
  skip_spaces();
  const auto ampm = word();
  if ((ampm != "am" && ampm != "pm") || hour < 1 || hour > 12 || minute > 59) return false;
  hour = hour % 12 + (ampm == "pm" ? 12 : 0);
  skip_spaces();
  if (word() != "on") return false;
  skip_spaces();
  if (!number(2, day)) return false;
  skip_spaces();
  static const char* kMonths[] = {"january",   "february", "march",    "april",
                                  "may",       "june",     "july",     "august",
                                  "september", "october",  "november", "december"};
  const auto month_name = word();
  unsigned month = 0;
  for (unsigned m = 0; m < 12; ++m) {
    const std::string full = kMonths[m];
    if (month_name == full || (month_name.size() == 3 && full.compare(0, 3, month_name) == 0)) {
      month = m + 1;
    }
  }
  if (month == 0 || day < 1 || day > 31) return false;
  if (p < s.size() && s[p] == ',') ++p;
  skip_spaces();
  if (!number(4, year)) return false;
  skip_spaces();
  if (p != s.size()) return false;
  minutes = (days_from_civil(year, month, static_cast<unsigned>(day)) * 24 + hour) * 60 + minute;
  return true;
}

int locomo_question_speaker(const LocomoConversation& c, const std::vector<DiaKey>& evidence,
                            std::string_view question) {
  int votes[2] = {0, 0};
  for (const DiaKey e : evidence) {
    const auto pos = c.turn_position(e);
    if (pos >= 0) ++votes[c.turns[static_cast<std::size_t>(pos)].speaker];
  }
  if (votes[0] != votes[1]) return votes[0] > votes[1] ? 0 : 1;
  std::vector<std::string> words;
  bm25_tokenize(question, words);
  bool named[2] = {false, false};
  for (int s = 0; s < 2; ++s) {
    std::vector<std::string> name;
    bm25_tokenize(c.speakers[s], name);
    named[s] = !name.empty() && std::find(words.begin(), words.end(), name[0]) != words.end();
  }
  return named[1] && !named[0] ? 1 : 0;
}

LocomoUser locomo_user(std::uint64_t user, std::size_t conversations) {
  LocomoUser u;
  u.conversation = static_cast<std::uint32_t>(user % conversations);
  u.speaker = static_cast<int>((user / conversations) % 2);
  u.replica = static_cast<std::uint32_t>(user / (2 * conversations));
  return u;
}

void load_locomo_json(std::string_view text, const std::string& name, LocomoData& out) {
  Json doc;
  try {
    doc = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    long line = 1, column = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw InputError(position(name, line, column), "malformed JSON");
  }
  Loader loader(name, out);
  const auto stem = std::filesystem::path(name).stem().string();
  if (doc.is_array()) {
    for (std::size_t i = 0; i < doc.size(); ++i) {
      std::string index = "[";
      index.append(std::to_string(i)).append("]");
      loader.item(doc[i], index, stem + index);
    }
  } else {
    loader.item(doc, "", stem);
  }
}

LocomoSearch locomo_search(const std::string& given) {
  LocomoSearch s;
  s.given = given;
  if (const char* env = std::getenv("INFERSCALE_LOCOMO")) s.env = env;
  s.repository = INFERSCALE_SOURCE_DIR;
  return s;
}

std::vector<std::string> locomo_places(const LocomoSearch& s) {
  if (!s.given.empty()) return {s.given};
  if (!s.env.empty()) return {s.env};
  return {s.repository + "/data/locomo10", s.repository + "/../shared/data/locomo10"};
}

namespace {

bool holds_locomo(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return true;
  if (!std::filesystem::is_directory(path, ec)) return false;
  for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".json") return true;
  }
  return false;
}

}  // namespace

std::string find_locomo(const LocomoSearch& s, const std::string& where) {
  const auto places = locomo_places(s);
  for (const auto& p : places) {
    if (holds_locomo(p)) return p;
  }
  std::string list;
  for (std::size_t i = 0; i < places.size(); ++i) {
    list += (i == 0 ? "" : ", ") + std::to_string(i + 1) + ". " + places[i];
  }
  const char* named = !s.given.empty() ? " (the folder given, used alone)"
                      : !s.env.empty() ? " ($INFERSCALE_LOCOMO, used alone)"
                                       : "";
  throw InputError(
      where,
      "LoCoMo data not found. LoCoMo (\"Evaluating Very Long-Term Conversational Memory of LLM "
      "Agents\", 2024) is a benchmark of 10 long multi-session conversations with QA "
      "annotations, licensed CC BY-NC 4.0 and not shipped with InferScale; it is published in "
      "the GitHub repository snap-research/locomo as data/locomo10.json. Searched, in order: " +
          list + named +
          ". Put locomo10.json in one of these folders, or name its folder with --data DIR "
          "(`data: DIR` in a config) or INFERSCALE_LOCOMO=DIR");
}

LocomoData load_locomo(const std::string& path) {
  LocomoData data;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(path)) {
      if (e.is_regular_file() && e.path().extension() == ".json")
        files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) throw InputError(path, "no .json files in this directory (LoCoMo data)");
    for (const auto& f : files) load_locomo_json(read_file(f), f, data);
  } else if (std::filesystem::exists(path, ec)) {
    load_locomo_json(read_file(path), path, data);
  } else {
    throw InputError(path,
                     "no such file or directory (LoCoMo data: a directory of <id>.json "
                     "files or one locomo10.json)");
  }
  if (data.conversations.empty()) throw InputError(path, "no conversations");
  return data;
}

}  // namespace inferscale
