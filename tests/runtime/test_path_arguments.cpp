// The functions that take a std::filesystem::path also take a string, without
// <filesystem> (see <cuwrap/detail/path.hpp>): this file includes nothing before cuwrap
// and makes its calls before anything else is included, so overload resolution sees
// only the forward declaration of path. test_path_arguments_fs.cpp makes the same calls
// with <filesystem> included, where a literal must not be ambiguous.
#include <cuwrap/cuwrap.hpp>

#include "checks.hpp"

#include <stdexcept>
#include <string>
#include <string_view>

namespace {

using cuwrap::testing::thrown_message;

// Each returns the message of what the call threw (they fail before touching a GPU).
std::string from_file_literal() {
  return thrown_message<std::runtime_error>(
      [] { static_cast<void>(cuwrap::ObjectCode::from_file("no-such-dir/k.cubin")); });
}
std::string from_file_string() {
  const std::string name = "no-such-dir/k.weird";
  return thrown_message<std::invalid_argument>(
      [&] { static_cast<void>(cuwrap::ObjectCode::from_file(name)); });
}
std::string from_file_string_view() {
  const std::string_view name = "no-such-dir/k.ptx";
  return thrown_message<std::runtime_error>(
      [&] { static_cast<void>(cuwrap::ObjectCode::from_file(name, {})); });
}
std::string dot_print_literal() {
  const cuwrap::GraphBuilder closed;
  return thrown_message<std::logic_error>([&] { closed.debug_dot_print("graph.dot"); });
}
std::string file_cache_literal() {
  return thrown_message<std::invalid_argument>(
      [] { const cuwrap::FileProgramCache cache("", 1 << 20); });
}
std::string ipc_listener_literal() {
  return thrown_message<std::invalid_argument>([] { const cuwrap::IPCListener listener(""); });
}
std::string ipc_connect_literal() {
  return thrown_message<std::invalid_argument>(
      [] { static_cast<void>(cuwrap::IPCChannel::connect("")); });
}

}  // namespace

namespace path_probe {

// Whether std::filesystem::path was a complete type where the calls above were made
// (evaluated here once, before anything below includes <filesystem>). A guard macro of
// one standard library would tell nothing on another; the type's completeness is what
// overload resolution saw.
template <class T>
concept Complete = requires {
  sizeof(T);
};
inline constexpr bool kPathWasComplete = Complete<std::filesystem::path>;

#if defined(__GLIBCXX__)
// With libstdc++, <cuwrap/detail/path.hpp> declares path without defining it. Other
// standard libraries get <filesystem> from it: there the calls below run with path
// complete, as in test_path_arguments_fs.cpp.
static_assert(!kPathWasComplete,
              "std::filesystem::path was defined before the calls: the test proves nothing");
#endif

}  // namespace path_probe

#include <gtest/gtest.h>

namespace {

using cuwrap::testing::contains;

TEST(PathArgumentsWithoutFilesystem, ObjectCodeFromFileTakesStrings) {
  const std::string literal = from_file_literal();
  EXPECT_TRUE(contains(literal, "no-such-dir/k.cubin")) << literal;
  const std::string string = from_file_string();
  EXPECT_TRUE(contains(string, ".weird")) << string;
  const std::string view = from_file_string_view();
  EXPECT_TRUE(contains(view, "no-such-dir/k.ptx")) << view;
}

TEST(PathArgumentsWithoutFilesystem, GraphDebugDotPrintTakesALiteral) {
  const std::string thrown = dot_print_literal();
  EXPECT_TRUE(contains(thrown, "closed")) << thrown;
}

TEST(PathArgumentsWithoutFilesystem, FileProgramCacheTakesALiteral) {
  const std::string thrown = file_cache_literal();
  EXPECT_TRUE(contains(thrown, "empty")) << thrown;
}

TEST(PathArgumentsWithoutFilesystem, IpcSocketsTakeLiterals) {
  const std::string listener = ipc_listener_literal();
  EXPECT_TRUE(contains(listener, "empty")) << listener;
  const std::string connect = ipc_connect_literal();
  EXPECT_TRUE(contains(connect, "empty")) << connect;
}

}  // namespace
