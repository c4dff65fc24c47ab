#pragma once
// @brief A hand-made LoCoMo input shared by the loader and importer tests, and where the tests
// on the real LoCoMo find it.

#include <string>

#include "traces/error.h"
#include "traces/locomo.h"

namespace inferscale::test {

/// The real LoCoMo, found as the program finds it (traces/locomo.h: $INFERSCALE_LOCOMO, else
/// the repository's data/locomo10/, else ../shared/data/locomo10); "" with `why` set (what
/// LoCoMo is, where it is published, where to put it) when it is in none of them. The tests on
/// it FAIL (not skip) then: CI has it beside the checkout.
inline std::string real_locomo(std::string& why) {
  try {
    return find_locomo(locomo_search(""), "LoCoMo for the tests");
  } catch (const InputError& e) {
    why = e.what();
    return "";
  }
}

// Two conversations in the single-list layout (locomo10.json): X with Ann and Bob, Y with Cid
// and Dee. The questions exercise each rule of locomo_question_speaker.
inline constexpr const char* kTwoConversations = R"([
{"sample_id": "X",
 "conversation": {"speaker_a": "Ann", "speaker_b": "Bob",
   "session_1_date_time": "10:00 am on 1 January, 2023",
   "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I got a cat, Tom."},
                 {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice. I play chess on Sundays."},
                 {"speaker": "Ann", "dia_id": "D1:3", "text": "I drink green tea."}],
   "session_2_date_time": "10:00 am on 11 January, 2023",
   "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "I moved to Paris!"},
                 {"speaker": "Ann", "dia_id": "D2:2", "text": "I will visit you."}],
   "session_3_date_time": "9:00 pm on 12 Jan, 2023"},
 "observation": {
   "session_1_observation": {"Ann": [["Ann has a cat named Tom.", "D1:1"],
                                     ["Ann drinks green tea.", "D1:3"]],
                             "Bob": [["Bob plays chess on Sundays.", "D1:2"]]},
   "session_2_observation": {"Bob": [["Bob moved to Paris.", ["D2:1"]]],
                             "Ann": [["Ann will visit Bob in Paris.", "D2:2, D2:1"]]}},
 "qa": [
   {"question": "What pet does Ann have?", "answer": "a cat", "evidence": ["D1:1"], "category": 1},
   {"question": "Where did he move?", "answer": "Paris", "evidence": ["D2:1"], "category": 2},
   {"question": "Did Ann and Bob meet?", "answer": "yes", "evidence": ["D1:1", "D1:2"], "category": 3},
   {"question": "What game does Bob play with his cat?", "adversarial_answer": "chess", "evidence": [], "category": 5},
   {"question": "What does Bob drink?", "answer": 2023, "evidence": ["D1:3; D1:2"], "category": 4}]},
{"sample_id": "Y",
 "conversation": {"speaker_a": "Cid", "speaker_b": "Dee",
   "session_1_date_time": "1:56 pm on 8 May, 2023",
   "session_1": [{"speaker": "Dee", "dia_id": "D1:1", "text": "Hi Cid"},
                 {"speaker": "Cid", "dia_id": "D1:2", "text": "I paint."}]},
 "observation": {"session_1_observation": {"Cid": [["Cid paints.", "D1:2"]],
                                           "Dee": [["Dee greets Cid.", "D1:1"]]}},
 "qa": [{"question": "What does Cid do?", "answer": "paints", "evidence": ["D:1:2", "D"], "category": 1}]}
])";

}  // namespace inferscale::test
