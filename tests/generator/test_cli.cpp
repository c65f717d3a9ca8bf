// The cuwrap-gen command line: exit codes and messages for good and bad input.
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>

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
  EXPECT_NE(r.output.find(
                "cuda.h: 8 functions declared, 6/8 with a typed form, 0 pass-through, 2 raw-only"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("raw-only: cuLogMessage (variadic parameter list)"), std::string::npos)
      << r.output;
  for (const char* f : {"include/cuwrap/driver.hpp", "include/cuwrap/driver_raw.hpp",
                        "include/cuwrap/driver_enums.hpp", "include/cuwrap/nvrtc.hpp",
                        "include/cuwrap/nvrtc_raw.hpp", "include/cuwrap/nvrtc_enums.hpp",
                        "include/cuwrap/nvjitlink.hpp", "include/cuwrap/nvjitlink_raw.hpp",
                        "include/cuwrap/nvjitlink_enums.hpp", "include/cuwrap/detail/symbols.hpp",
                        "include/cuwrap/detail/device_attributes.inc",
                        "include/cuwrap/detail/function_attributes.inc", "src/driver.cpp",
                        "src/nvrtc.cpp", "src/nvjitlink.cpp"}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(dir.path() / "out" / f)) << f;
  }
  const auto json = nlohmann::json::parse(testing::read_file(report));
  EXPECT_EQ(json["cuda_version"], 12030);
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

// nvvm.h is optional: its absence is said, naming the file and where it was looked for,
// and its bindings are left out; found in a toolkit's nvvm/include, it is wrapped.
TEST(Cli, NvvmHeaderAbsentIsReportedAndFoundInNvvmInclude) {
  ScratchDir dir;
  const auto include = dir.path() / "toolkit" / "include";
  std::filesystem::create_directories(include);
  std::filesystem::copy(kFixtures / "basic", include);
  const auto without = generate(include, dir.path() / "without");
  ASSERT_EQ(without.exit_code, 0) << without.output;
  EXPECT_NE(without.output.find("cuwrap-gen: nvvm.h not found (looked for " +
                                (include / "nvvm.h").string()),
            std::string::npos)
      << without.output;
  EXPECT_NE(without.output.find("the bindings omit <cuwrap/nvvm.hpp>"), std::string::npos)
      << without.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "without/include/cuwrap/nvvm.hpp"));
  const std::string symbols =
      testing::read_file(dir.path() / "without/include/cuwrap/detail/symbols.hpp");
  EXPECT_NE(symbols.find("\"libnvvm\", \"nvvm.h\", \"CUWRAP_LIBNVVM\", \"libnvvm.so.4\""),
            std::string::npos)
      << symbols;

  std::filesystem::path nvvm_h = std::filesystem::path(CUWRAP_CUDA_INCLUDE_DIR) / "nvvm.h";
  if (!std::filesystem::is_regular_file(nvvm_h)) {
    nvvm_h = std::filesystem::path(CUWRAP_CUDA_INCLUDE_DIR) / "../nvvm/include/nvvm.h";
  }
  if (!std::filesystem::is_regular_file(nvvm_h)) {
    GTEST_SKIP() << "the configured toolkit has no nvvm.h to place in nvvm/include";
  }
  std::filesystem::create_directories(dir.path() / "toolkit/nvvm/include");
  std::filesystem::copy_file(nvvm_h, dir.path() / "toolkit/nvvm/include/nvvm.h");
  const auto with = generate(include, dir.path() / "with");
  ASSERT_EQ(with.exit_code, 0) << with.output;
  EXPECT_EQ(with.output.find("nvvm.h not found"), std::string::npos) << with.output;
  EXPECT_NE(with.output.find("\nnvvm.h: "), std::string::npos) << with.output;  // its coverage line
  for (const char* f : {"include/cuwrap/nvvm.hpp", "include/cuwrap/nvvm_raw.hpp",
                        "include/cuwrap/nvvm_enums.hpp", "src/nvvm.cpp"}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(dir.path() / "with" / f)) << f;
  }
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

// The fixture's headers without cudaTypedefs.h, in `dir`; return `dir`.
const std::filesystem::path& without_typedefs(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  for (const char* h : {"cuda.h", "nvrtc.h", "nvJitLink.h"}) {
    std::filesystem::copy_file(kFixtures / "basic" / h, dir / h);
  }
  return dir;
}

// Without cudaTypedefs.h no entry point's ABI version is known: an error naming the
// file and the option that takes the versions from the versioned names instead.
TEST(Cli, MissingCudaTypedefsExits2NamingItAndTheWayOut) {
  ScratchDir dir;
  const auto include = without_typedefs(dir.path());
  const auto r = generate(include, dir.path() / "out");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find((include / "cudaTypedefs.h").string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--abi-from-defines"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out"));
}

// Report entry `name` of cuda.h in a JSON report.
nlohmann::json driver_function(const nlohmann::json& report, const std::string& name) {
  for (const auto& f : report["headers"][0]["functions"]) {
    if (f["name"] == name) {
      return f;
    }
  }
  ADD_FAILURE() << name << " not in the report";
  return {};
}

// --abi-from-defines: the versioned names give the versions cudaTypedefs.h gives; a
// symbol the table does not know (the fixture's invented ones) is requested as
// CUDA_VERSION and named in the printed report, in the JSON and in the bindings' info.
TEST(Cli, AbiFromDefinesMatchesTypedefsAndNamesWhatItDoesNotKnow) {
  ScratchDir dir;
  const auto typedefs_report = dir.path() / "typedefs.json";
  const auto typed = generate(kFixtures / "basic", dir.path() / "typed",
                              "--report " + quoted(typedefs_report.string()));
  ASSERT_EQ(typed.exit_code, 0) << typed.output;
  // cudaTypedefs.h of the fixture has no typedef for cuLogMessage: reported, not silent.
  EXPECT_NE(
      typed.output.find("ABI version unknown: cuLogMessage (requested as CUDA_VERSION 12030)"),
      std::string::npos)
      << typed.output;
  const auto typedefs = nlohmann::json::parse(testing::read_file(typedefs_report));
  EXPECT_EQ(typedefs["abi_versions_from"], "cudaTypedefs.h");
  EXPECT_EQ(typedefs["abi_version_unknown"], nlohmann::json::array({"cuLogMessage"}));

  const auto include = without_typedefs(dir.path() / "include");
  const auto defines_report = dir.path() / "defines.json";
  const auto r = generate(include, dir.path() / "out",
                          "--abi-from-defines --report " + quoted(defines_report.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ABI versions from cuda.h's versioned names"), std::string::npos)
      << r.output;
  for (const char* unknown : {"cuOpaqueGetState", "cuLogMessage"}) {
    EXPECT_NE(r.output.find(std::string("ABI version unknown: ") + unknown +
                            " (requested as CUDA_VERSION 12030)"),
              std::string::npos)
        << r.output;
  }
  const auto defines = nlohmann::json::parse(testing::read_file(defines_report));
  EXPECT_EQ(defines["abi_versions_from"], "versioned names");
  EXPECT_EQ(defines["abi_version_unknown"],
            nlohmann::json::array({"cuOpaqueGetState", "cuLogMessage"}));
  for (const char* known : {"cuMemAlloc", "cuMemGetInfo", "cuMemcpyHtoD", "cuStreamQuery",
                            "cuDeviceGetName", "cuGraphGetNodes"}) {
    const auto a = driver_function(defines, known);
    const auto b = driver_function(typedefs, known);
    EXPECT_EQ(a["abi_version"], b["abi_version"]) << known;
    EXPECT_EQ(a["per_thread_abi_version"], b["per_thread_abi_version"]) << known;
    EXPECT_EQ(a["proc_name"], b["proc_name"]) << known;
    EXPECT_FALSE(a.contains("abi_version_unknown")) << known;
  }
  EXPECT_EQ(driver_function(defines, "cuOpaqueGetState")["abi_version"], 12030);
  EXPECT_EQ(driver_function(defines, "cuOpaqueGetState")["abi_version_unknown"], true);
  const auto symbols = testing::read_file(dir.path() / "out/include/cuwrap/detail/symbols.hpp");
  EXPECT_NE(symbols.find("kAbiVersionsFrom = \"versioned names\";"), std::string::npos);
  EXPECT_NE(testing::read_file(dir.path() / "typed/include/cuwrap/detail/symbols.hpp")
                .find("kAbiVersionsFrom = \"cudaTypedefs.h\";"),
            std::string::npos);
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

// CUDA 11.8 has no nvJitLink.h: the driver and NVRTC bindings are generated and
// compile; nvjitlink.hpp is not generated and its symbol table is empty.
TEST(Cli, GeneratesWithoutNvJitLinkHeader) {
  ScratchDir dir;
  const auto include = dir.path() / "include-11.8";
  std::filesystem::create_directories(include);
  for (const char* h : {"cuda.h", "nvrtc.h", "cudaTypedefs.h"}) {
    std::filesystem::copy_file(kFixtures / "basic" / h, include / h);
  }
  const auto r = generate(include, dir.path() / "out");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("nvJitLink.h:"), std::string::npos) << r.output;
  for (const char* absent : {"nvjitlink.hpp", "nvjitlink_raw.hpp", "nvjitlink_enums.hpp"}) {
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "out/include/cuwrap" / absent)) << absent;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out/src/nvjitlink.cpp"));
  const auto symbols = testing::read_file(dir.path() / "out/include/cuwrap/detail/symbols.hpp");
  EXPECT_NE(symbols.find("inline constexpr std::size_t kNvJitLinkSymbolCount = 0;"),
            std::string::npos);
  // Regenerating there from a toolkit with nvJitLink.h and then again without it leaves
  // no nvJitLink file behind for an include to find, and says so.
  ASSERT_EQ(generate(kFixtures / "basic", dir.path() / "out").exit_code, 0);
  ASSERT_TRUE(std::filesystem::exists(dir.path() / "out/include/cuwrap/nvjitlink_raw.hpp"));
  const auto again = generate(include, dir.path() / "out");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  for (const char* stale : {"include/cuwrap/nvjitlink.hpp", "include/cuwrap/nvjitlink_raw.hpp",
                            "include/cuwrap/nvjitlink_enums.hpp", "src/nvjitlink.cpp"}) {
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "out" / stale)) << stale;
    EXPECT_NE(again.output.find(std::string("cuwrap-gen: removed ") + stale), std::string::npos)
        << again.output;
  }
  // The loader reads kNvJitLinkSymbols/kNvJitLinkSymbolCount; they must still exist.
  const auto use = dir.path() / "use.cpp";
  std::ofstream(use)
      << "#include <cuwrap/driver.hpp>\n#include <cuwrap/nvrtc.hpp>\n"
         "static_assert(cuwrap::detail::kNvJitLinkSymbolCount == 0);\n"
         "const cuwrap::detail::Symbol* table = cuwrap::detail::kNvJitLinkSymbols;\n";
  const std::string includes = " -I" + quoted((dir.path() / "out/include").string()) + " -I" +
                               quoted(CUWRAP_RUNTIME_INCLUDE_DIR) + " -I" +
                               quoted(include.string());
  for (const auto& src :
       {use, dir.path() / "out/src/driver.cpp", dir.path() / "out/src/nvrtc.cpp"}) {
    const auto c = run_command(quoted(CUWRAP_CXX_COMPILER) +
                               " -std=c++20 -Wall -Wextra -Wpedantic -Werror -fsyntax-only" +
                               includes + " " + quoted(src.string()));
    EXPECT_EQ(c.exit_code, 0) << src << "\n" << c.output;
  }
}

// nvJitLink.h of another toolkit than cuda.h: the generator names both versions, stops
// and writes nothing.
TEST(Cli, MixedToolkitHeadersExit1NamingEachVersion) {
  ScratchDir dir;
  const auto include = dir.path() / "mixed";
  std::filesystem::create_directories(include);
  for (const char* h : {"cuda.h", "nvrtc.h", "cudaTypedefs.h"}) {
    std::filesystem::copy_file(kFixtures / "basic" / h, include / h);
  }
  std::string jit = testing::read_file(kFixtures / "basic" / "nvJitLink.h");
  for (std::size_t at = jit.find("_12_3"); at != std::string::npos; at = jit.find("_12_3", at)) {
    jit.replace(at, 5, "_13_0");
  }
  std::ofstream(include / "nvJitLink.h") << jit;
  const auto r = generate(include, dir.path() / "out");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cuda.h is CUDA 12.3 (CUDA_VERSION 12030)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("nvJitLink.h is CUDA 13.0"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out"));
}

// Regenerating identical bindings leaves every file untouched (timestamps included), so
// a build after it rebuilds nothing; a changed file is replaced.
TEST(Cli, RegenerationRewritesOnlyChangedFiles) {
  ScratchDir dir;
  const auto out = dir.path() / "out";
  ASSERT_EQ(generate(kFixtures / "basic", out).exit_code, 0);
  const auto header = out / "include/cuwrap/driver.hpp";
  const auto source = out / "src/driver.cpp";
  const auto old_time = std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
  std::filesystem::last_write_time(header, old_time);
  std::filesystem::last_write_time(source, old_time);
  std::ofstream(source, std::ios::app) << "// edited\n";
  std::filesystem::last_write_time(source, old_time);
  ASSERT_EQ(generate(kFixtures / "basic", out).exit_code, 0);
  EXPECT_EQ(std::filesystem::last_write_time(header), old_time) << "unchanged file rewritten";
  EXPECT_NE(std::filesystem::last_write_time(source), old_time) << "changed file kept";
  EXPECT_EQ(testing::read_file(source).find("// edited"), std::string::npos);
}

TEST(Cli, VersionAndUsage) {
  const auto version = run_command(quoted(CUWRAP_GEN_EXE) + " --version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.output.find("cuwrap-gen"), std::string::npos);
  EXPECT_NE(run_command(quoted(CUWRAP_GEN_EXE)).exit_code, 0)
      << "--cuda-include and --output are required";
}

// --compare with an include directory parses it as the old side; without --output
// nothing but the comparison is written. The same headers on both sides: no change.
TEST(Cli, CompareWithAnIncludeDirOrAReportWritesMarkdownAndJson) {
  ScratchDir dir;
  const auto md = dir.path() / "compare.md";
  const auto json = dir.path() / "compare.json";
  const auto report = dir.path() / "report.json";
  const auto r =
      run_command(quoted(CUWRAP_GEN_EXE) + " --cuda-include " +
                  quoted((kFixtures / "basic").string()) + " --report " + quoted(report.string()) +
                  " --compare " + quoted((kFixtures / "basic").string()) + " --compare-markdown " +
                  quoted(md.string()) + " --compare-json " + quoted(json.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("CUDA 12.3 -> CUDA 12.3: 0 functions added, 0 functions removed"),
            std::string::npos)
      << r.output;
  EXPECT_NE(testing::read_file(md).find("| functions added | 0 |"), std::string::npos);
  const auto c = nlohmann::json::parse(testing::read_file(json));
  EXPECT_EQ(c["summary"]["functions_added"], 0);
  EXPECT_EQ(c["old"]["source"], (kFixtures / "basic").string());
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "include"));

  // The report just written as the old side, less its first function: that function
  // is "added" now.
  auto old = nlohmann::json::parse(testing::read_file(report));
  const std::string dropped = old["headers"][0]["functions"][0]["name"];
  old["headers"][0]["functions"].erase(0);
  std::ofstream(dir.path() / "old.json") << old.dump();
  const auto again = run_command(quoted(CUWRAP_GEN_EXE) + " --cuda-include " +
                                 quoted((kFixtures / "basic").string()) + " --compare " +
                                 quoted((dir.path() / "old.json").string()));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find(": 1 functions added, 0 functions removed"), std::string::npos)
      << again.output;
  // Without --compare-markdown the Markdown goes to standard output.
  EXPECT_NE(again.output.find("## Functions added\n\n- `" + dropped + "` (cuda.h)"),
            std::string::npos)
      << again.output;
}

TEST(Cli, CompareWithABadReportFailsNamingIt) {
  ScratchDir dir;
  const auto compare = [&](const std::filesystem::path& old) {
    return run_command(quoted(CUWRAP_GEN_EXE) + " --cuda-include " +
                       quoted((kFixtures / "basic").string()) + " --compare " +
                       quoted(old.string()));
  };
  const auto missing = compare(dir.path() / "none.json");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("cuwrap-gen: --compare: report not found: " +
                                (dir.path() / "none.json").string()),
            std::string::npos)
      << missing.output;

  std::ofstream(dir.path() / "garbled.json") << "{\"headers\": [";
  const auto garbled = compare(dir.path() / "garbled.json");
  EXPECT_EQ(garbled.exit_code, 1) << garbled.output;
  EXPECT_NE(garbled.output.find((dir.path() / "garbled.json").string() +
                                " is not a cuwrap-gen report (not JSON"),
            std::string::npos)
      << garbled.output;

  // A report of the first format (no format_version), as earlier cuwrap-gen wrote it.
  std::ofstream(dir.path() / "v1.json") << R"({"cuda_version": 12030, "headers": []})";
  const auto v1 = compare(dir.path() / "v1.json");
  EXPECT_EQ(v1.exit_code, 1) << v1.output;
  EXPECT_NE(v1.output.find("v1.json is a report of format version 1"), std::string::npos)
      << v1.output;
  EXPECT_NE(v1.output.find("this cuwrap-gen reads format version 2"), std::string::npos)
      << v1.output;
}

TEST(Cli, OutputIsRequiredWithoutCompare) {
  const auto r = run_command(quoted(CUWRAP_GEN_EXE) + " --cuda-include " +
                             quoted((kFixtures / "basic").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--output"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace cuwrap::gen
