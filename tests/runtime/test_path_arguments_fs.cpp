// With <filesystem> included, the path overloads take paths and the string twins take
// strings, never ambiguously (see <cuwrap/detail/path.hpp>; test_path_arguments.cpp
// makes the string calls without <filesystem>).
#include <filesystem>

#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include "checks.hpp"

#include <stdexcept>
#include <string>
#include <type_traits>

namespace {

namespace fs = std::filesystem;
using cuwrap::ObjectCode;

static_assert(std::is_same_v<decltype(ObjectCode::from_file(fs::path("k.cubin"))), ObjectCode>);
static_assert(std::is_same_v<decltype(ObjectCode::from_file("k.cubin")), ObjectCode>);
static_assert(std::is_same_v<decltype(ObjectCode::from_file(std::string("k.cubin"))), ObjectCode>);
static_assert(!cuwrap::detail::PathString<fs::path>,
              "a path goes to the path overload, not the string twin");

using cuwrap::testing::contains;
using cuwrap::testing::thrown_message;

TEST(PathArgumentsWithFilesystem, ObjectCodeFromFileTakesPathsAndLiterals) {
  const fs::path missing = fs::path("no-such-dir") / "k.cubin";
  const std::string with_path = thrown_message<std::runtime_error>(
      [&] { static_cast<void>(ObjectCode::from_file(missing)); });
  EXPECT_TRUE(contains(with_path, "no-such-dir/k.cubin")) << with_path;
  const std::string with_literal = thrown_message<std::runtime_error>(
      [] { static_cast<void>(ObjectCode::from_file("no-such-dir/k.cubin")); });
  EXPECT_TRUE(contains(with_literal, "no-such-dir/k.cubin")) << with_literal;
}

TEST(PathArgumentsWithFilesystem, GraphDebugDotPrintTakesPathsAndLiterals) {
  const cuwrap::GraphBuilder closed;
  EXPECT_THROW(closed.debug_dot_print(fs::path("graph.dot")), std::logic_error);
  EXPECT_THROW(closed.debug_dot_print("graph.dot"), std::logic_error);
}

TEST(PathArgumentsWithFilesystem, CachesAndSocketsTakePathsAndLiterals) {
  EXPECT_THROW(cuwrap::FileProgramCache(fs::path(), 1 << 20), std::invalid_argument);
  EXPECT_THROW(cuwrap::FileProgramCache("", 1 << 20), std::invalid_argument);
  EXPECT_THROW(cuwrap::IPCListener{fs::path()}, std::invalid_argument);
  EXPECT_THROW(cuwrap::IPCListener(""), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(cuwrap::IPCChannel::connect(fs::path())), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(cuwrap::IPCChannel::connect("")), std::invalid_argument);
}

}  // namespace
