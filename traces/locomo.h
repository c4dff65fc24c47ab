#pragma once
// @brief LoCoMo: the conversations, facts and questions of the LoCoMo benchmark as read from
// its JSON (per-conversation files `26.json` ... or one `locomo10.json` list), and the rules
// that turn them into users: which speaker a fact and a question belong to.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "traces/recall.h"

namespace inferscale {

struct LocomoTurn {
  DiaKey id = 0;
  int speaker = 0;          // 0 = speaker_a, 1 = speaker_b
  std::uint32_t words = 0;  // words of "Speaker: text" (the name counts as one word)
  std::string text;         // the turn's text (context of Context-Window Encoding)
};

struct LocomoFact {
  std::string text;
  std::vector<DiaKey> sources;  // the turns it was extracted from (usually one)
  std::string source;           // canonical, comma-separated: "D27:7,D27:9"
  int session = 0;              // N of session_N_observation
  std::int64_t date_min = 0;    // the session's date, minutes since 1970-01-01
  /// Position in LocomoConversation::turns of its latest source turn (its context is the turns
  /// before it); when no source names a turn, the session's first turn.
  std::uint32_t anchor_turn = 0;
  std::uint32_t words = 0;
};

struct LocomoQa {
  std::string question;
  std::string answer;  // "" for adversarial items that carry only `adversarial_answer`
  int category = 0;    // 1..5
  std::vector<DiaKey> evidence;
  int speaker = 0;  // the user it is about (locomo_question_speaker)
};

struct LocomoConversation {
  std::string id;  // sample_id, or the file name without ".json"
  std::string speakers[2];
  std::vector<LocomoTurn> turns;                       // all sessions, in order
  std::vector<LocomoFact> facts[2];                    // by speaker, in session and list order
  std::vector<LocomoQa> qa;                            // in file order
  std::int64_t first_date_min = 0, last_date_min = 0;  // over sessions with turns
  /// Position in `turns` of a dia_id, or -1.
  std::int64_t turn_position(DiaKey id) const;
};

struct LocomoData {
  std::vector<LocomoConversation> conversations;  // file-name order, then list order
  std::size_t dropped_evidence = 0;  // evidence entries that are no dia_id at all ("D")
  std::size_t facts() const;
  std::size_t questions() const;
};

/// Where LoCoMo is looked for. A place that is named (`given`, then `env`) is used alone;
/// otherwise the repository's data/locomo10/, then ../shared/data/locomo10 beside it.
struct LocomoSearch {
  std::string given;       // --data or `data:` ("" : not given)
  std::string env;         // $INFERSCALE_LOCOMO ("" : unset)
  std::string repository;  // the source tree
};
/// The search for `given` in this process: $INFERSCALE_LOCOMO and the source tree.
LocomoSearch locomo_search(const std::string& given);
/// The places `s` looks in, in order.
std::vector<std::string> locomo_places(const LocomoSearch& s);
/// The first place that holds LoCoMo (one .json file, or a directory with .json files); else
/// InputError at `where` saying what LoCoMo is, where it is published and where to put it.
std::string find_locomo(const LocomoSearch& s, const std::string& where);

/// Reads LoCoMo from a directory of per-conversation files (`*.json`, sorted by name) or from
/// one file (one conversation object, or a list of them). Errors: InputError with the file and
/// the key path.
LocomoData load_locomo(const std::string& path);
/// Same from JSON text (`name` is used in error messages).
void load_locomo_json(std::string_view json_text, const std::string& name, LocomoData& out);

/// Parses a LoCoMo session date, "1:56 pm on 8 May, 2023", into minutes since 1970-01-01;
/// false when it does not parse.
bool parse_locomo_date(std::string_view text, std::int64_t& minutes);

/// The speaker (0 = speaker_a, 1 = speaker_b) a question is about: the one whose turns hold
/// the majority of its evidence; on a tie (or no evidence), the one whose first name appears
/// in the question (as a word, case-insensitive) when only one does; else speaker_a.
int locomo_question_speaker(const LocomoConversation& c, const std::vector<DiaKey>& evidence,
                            std::string_view question);

/// The user -> (conversation, speaker, replica) rule of the importer: user i takes conversation
/// i % C, speaker (i / C) % 2 and is replica i / (2C) of that speaker. With C = 10 and 20 users
/// this is exactly LoCoMo's 20 speakers.
struct LocomoUser {
  std::uint32_t conversation = 0;
  int speaker = 0;
  std::uint32_t replica = 0;
};
LocomoUser locomo_user(std::uint64_t user, std::size_t conversations);

}  // namespace inferscale
