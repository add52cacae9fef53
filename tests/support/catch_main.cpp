/**
 * @file catch_main.cpp
 * Catch2 v2 entry point shared by every test executable.
 */
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
