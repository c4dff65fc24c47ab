// Catch2 v2 needs a main; v3 links Catch2::Catch2WithMain instead.
#define CATCH_CONFIG_MAIN
#include "tests/catch.h"
