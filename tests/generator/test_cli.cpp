// The cuwrap-gen command line: exit codes and messages for good and bad input.
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace cuwrap::gen {
namespace {

using testing::quoted;
using testing::run_command;
using testing::ScratchDir;

const std::filesystem::path kFixtures = CUWRAP_FIXTURES_DIR;

testing::CommandResult generate(const std::filesystem::path& include,
                                const std::filesystem::path& output,
                                const std::string& extra = {}) {
  return run_command(quoted(CUWRAP_GEN_EXE) + " --cuda-include " + quoted(include.string()) +
                     " --output " + quoted(output.string()) + " " + extra);
}

TEST(Cli, GeneratesFixtureBindingsAndReport) {
  ScratchDir dir;
  const auto report = dir.path() / "report.json";
  const auto r =
      generate(kFixtures / "basic", dir.path() / "out", "--report " + quoted(report.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cuda.h: 8 functions declared, 6/8 with a typed form, 2 raw-only"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("raw-only: cuLogMessage (variadic parameter list)"), std::string::npos)
      << r.output;
  for (const char* f :
       {"include/cuwrap/driver.hpp", "include/cuwrap/nvrtc.hpp", "include/cuwrap/nvjitlink.hpp",
        "include/cuwrap/detail/symbols.hpp", "include/cuwrap/detail/device_attributes.inc",
        "include/cuwrap/detail/function_attributes.inc", "src/driver.cpp", "src/nvrtc.cpp",
        "src/nvjitlink.cpp"}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(dir.path() / "out" / f)) << f;
  }
  const auto json = nlohmann::json::parse(testing::read_file(report));
  EXPECT_EQ(json["cuda_version"], 12345);
  EXPECT_EQ(json["headers"][0]["raw_only"], 2);
  bool found = false;
  for (const auto& f : json["headers"][0]["functions"]) {
    if (f["name"] == "cuOpaqueGetState") {
      found = true;
      EXPECT_EQ(f["shape"], "raw-only");
      EXPECT_NE(f["raw_only_reason"].get<std::string>().find("incomplete type"), std::string::npos);
    }
  }
  EXPECT_TRUE(found);
}

TEST(Cli, FixtureBindingsCompile) {
  ScratchDir dir;
  ASSERT_EQ(generate(kFixtures / "basic", dir.path()).exit_code, 0);
  const std::string includes = " -I" + quoted((dir.path() / "include").string()) + " -I" +
                               quoted(CUWRAP_RUNTIME_INCLUDE_DIR) + " -I" +
                               quoted((kFixtures / "basic").string());
  const std::string flags = " -std=c++20 -Wall -Wextra -Wpedantic -Werror";
  for (const char* src : {"src/driver.cpp", "src/nvrtc.cpp", "src/nvjitlink.cpp"}) {
    const auto r = run_command(quoted(CUWRAP_CXX_COMPILER) + flags + " -fsyntax-only" + includes +
                               " " + quoted((dir.path() / src).string()));
    EXPECT_EQ(r.exit_code, 0) << src << "\n" << r.output;
  }
}

TEST(Cli, MissingDirectoryExits2NamingIt) {
  ScratchDir dir;
  const auto r = generate(dir.path() / "no-such-include", dir.path() / "out");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no-such-include"), std::string::npos) << r.output;
}

TEST(Cli, MissingHeaderExits2NamingIt) {
  ScratchDir dir;
  std::filesystem::copy_file(kFixtures / "basic" / "cuda.h", dir.path() / "cuda.h");
  const auto r = generate(dir.path(), dir.path() / "out");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("nvrtc.h"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out"));
}

TEST(Cli, MalformedHeaderExits1WithFileLine) {
  ScratchDir dir;
  const auto r = generate(testing::malformed_toolkit(dir.path()), dir.path() / "out");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cuda.h:9:"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out")) << "nothing written on failure";
}

TEST(Cli, UnwritableOutputExits1) {
  ScratchDir dir;
  const auto blocker = dir.path() / "a-file";
  std::ofstream(blocker) << "x";
  const auto r = generate(kFixtures / "basic", blocker / "out");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cannot write output directory"), std::string::npos) << r.output;
}

TEST(Cli, VersionAndUsage) {
  const auto version = run_command(quoted(CUWRAP_GEN_EXE) + " --version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.output.find("cuwrap-gen"), std::string::npos);
  EXPECT_NE(run_command(quoted(CUWRAP_GEN_EXE)).exit_code, 0)
      << "--cuda-include and --output are required";
}

}  // namespace
}  // namespace cuwrap::gen
