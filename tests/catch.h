#pragma once
// @brief The one Catch2 compatibility header: v2 (Debian 12) and v3 (the GPU machine).

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
using Catch::Approx;
/// Skips the current test with a visible reason.
#define INFERSCALE_SKIP(reason) SKIP(reason)
#else
#include <catch2/catch.hpp>
// v2 declares the scalar Approx in Catch::Detail (Catch::Approx names a vector matcher there).
using Catch::Detail::Approx;
// Catch2 v2 has no SKIP: the reason is printed and the test case ends without assertions. The
// CTest wrapper marks such tests skipped from their output (see tests/CMakeLists.txt).
#define INFERSCALE_SKIP(reason)                     \
  do {                                              \
    WARN("SKIPPED: " << reason);                    \
    return;                                         \
  } while (0)
#endif
