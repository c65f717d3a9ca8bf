// The functions that take a std::filesystem::path also take a string, without
// <filesystem> (see <cuwrap/detail/path.hpp>): this file includes nothing before cuwrap
// and makes its calls before anything else is included, so overload resolution sees
// only the forward declaration of path. test_path_arguments_fs.cpp makes the same calls
// with <filesystem> included, where a literal must not be ambiguous.
#include <cuwrap/cuwrap.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

namespace {

// Each returns what the call threw (the calls fail before touching a GPU).
template <class Call>
std::string thrown_by(Call&& call) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    return std::string("invalid_argument: ") + e.what();
  } catch (const std::logic_error& e) {
    return std::string("logic_error: ") + e.what();
  } catch (const std::runtime_error& e) {
    return std::string("runtime_error: ") + e.what();
  }
  return "nothing";
}

std::string from_file_literal() {
  return thrown_by([] { static_cast<void>(cuwrap::ObjectCode::from_file("no-such-dir/k.cubin")); });
}
std::string from_file_string() {
  const std::string name = "no-such-dir/k.weird";
  return thrown_by([&] { static_cast<void>(cuwrap::ObjectCode::from_file(name)); });
}
std::string from_file_string_view() {
  const std::string_view name = "no-such-dir/k.ptx";
  return thrown_by([&] { static_cast<void>(cuwrap::ObjectCode::from_file(name, {})); });
}
std::string dot_print_literal() {
  const cuwrap::GraphBuilder closed;
  return thrown_by([&] { closed.debug_dot_print("graph.dot"); });
}
std::string file_cache_literal() {
  return thrown_by([] { const cuwrap::FileProgramCache cache("", 1 << 20); });
}
std::string ipc_listener_literal() {
  return thrown_by([] { const cuwrap::IPCListener listener(""); });
}
std::string ipc_connect_literal() {
  return thrown_by([] { static_cast<void>(cuwrap::IPCChannel::connect("")); });
}

}  // namespace

#include <gtest/gtest.h>

namespace {

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

TEST(PathArgumentsWithoutFilesystem, ObjectCodeFromFileTakesStrings) {
  const std::string literal = from_file_literal();
  EXPECT_TRUE(contains(literal, "runtime_error") && contains(literal, "no-such-dir/k.cubin"))
      << literal;
  const std::string string = from_file_string();
  EXPECT_TRUE(contains(string, "invalid_argument") && contains(string, ".weird")) << string;
  const std::string view = from_file_string_view();
  EXPECT_TRUE(contains(view, "runtime_error") && contains(view, "no-such-dir/k.ptx")) << view;
}

TEST(PathArgumentsWithoutFilesystem, GraphDebugDotPrintTakesALiteral) {
  const std::string thrown = dot_print_literal();
  EXPECT_TRUE(contains(thrown, "logic_error") && contains(thrown, "closed")) << thrown;
}

TEST(PathArgumentsWithoutFilesystem, FileProgramCacheTakesALiteral) {
  const std::string thrown = file_cache_literal();
  EXPECT_TRUE(contains(thrown, "invalid_argument") && contains(thrown, "empty")) << thrown;
}

TEST(PathArgumentsWithoutFilesystem, IpcSocketsTakeLiterals) {
  const std::string listener = ipc_listener_literal();
  EXPECT_TRUE(contains(listener, "invalid_argument") && contains(listener, "empty")) << listener;
  const std::string connect = ipc_connect_literal();
  EXPECT_TRUE(contains(connect, "invalid_argument") && contains(connect, "empty")) << connect;
}

}  // namespace
