// LruOrder (LRU's queue with lazy deletion) keeps the order a linked list keeps: random pushes,
// moves to the front and erasures, many enough to compact the queue several times, answer every
// query as an IdList doing the same operations does.
#include <random>
#include <vector>

#include "policies/id_list.h"
#include "policies/lru_order.h"
#include "tests/catch.h"

using namespace inferscale;

namespace {

/// The ids of `order` from the back to the front, by back() and next_toward_front().
template <class Order>
std::vector<std::uint32_t> back_to_front(const Order& order) {
  std::vector<std::uint32_t> ids;
  for (std::uint32_t i = order.back(); i != Order::kNil; i = order.next_toward_front(i)) {
    ids.push_back(i);
  }
  return ids;
}

}  // namespace

TEST_CASE("LruOrder answers as a linked list over random operations") {
  for (const std::uint32_t universe : {8u, 300u, 5000u}) {
    INFO("ids below " << universe);
    std::mt19937 rng(universe);
    std::uniform_int_distribution<std::uint32_t> pick(0, universe - 1);
    LruOrder order;
    IdList list;
    std::uint64_t compared = 0;
    for (int op = 0; op < 60000; ++op) {
      const std::uint32_t id = pick(rng);
      const int what = int(rng() % 10);
      if (!list.contains(id)) {
        REQUIRE_FALSE(order.contains(id));
        if (what < 7) {
          order.push_front(id);
          list.push_front(id);
        }
      } else if (what < 6) {  // mostly hits: the queue fills with stale entries
        order.move_to_front(id);
        list.move_to_front(id);
      } else {
        order.erase(id);
        list.erase(id);
      }
      REQUIRE(order.size() == list.size());
      REQUIRE(order.back() == list.back());
      if (list.contains(id)) {
        REQUIRE(order.next_toward_front(id) == list.next_toward_front(id));
        REQUIRE(order.next_toward_back(id) == list.next_toward_back(id));
      }
      if (op % 997 == 0) {  // the whole order, and a store's walk over it
        const auto ids = back_to_front(list);
        REQUIRE(back_to_front(order) == ids);
        std::vector<std::uint32_t> walked;
        std::size_t cursor = order.walk_start();
        for (std::uint32_t i = order.walk_next(cursor); i != LruOrder::kNil;
             i = order.walk_next(cursor)) {
          walked.push_back(i);
        }
        REQUIRE(walked == ids);
        compared += ids.size();
      }
    }
    CHECK(compared > 0);
  }
}

TEST_CASE("LruOrder keeps the front in place and has no back when empty") {
  LruOrder order;
  CHECK(order.empty());
  CHECK(order.back() == LruOrder::kNil);
  order.push_front(3);
  order.push_front(7);
  order.move_to_front(7);
  order.move_to_front(3);
  CHECK(back_to_front(order) == std::vector<std::uint32_t>{7, 3});
  order.erase(7);
  order.erase(3);
  CHECK(order.empty());
  CHECK(order.back() == LruOrder::kNil);
  order.push_front(7);  // listed again after an erasure: its stale entries stay stale
  CHECK(back_to_front(order) == std::vector<std::uint32_t>{7});
}
