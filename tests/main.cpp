// tests/main.cpp: the one Catch2 main for amk_tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
