// The one translation unit that compiles Catch2's main (it takes ~20 s; keep it alone).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
