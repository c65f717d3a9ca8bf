// Port of cuda.core's tests/test_program_cache.py: one TEST per Python test function (see
// README.md for those not ported and why).
//
// cuda.core's names map to cuwrap's: `make_program_cache_key(code=, code_type=,
// options=, target_type=, name_expressions=)` is make_program_cache_key(code, code_type,
// options, target, name_expressions); `cache[k] = value` is put(k, value) (bytes) or
// put(k, object_code); `cache[k]` and `cache.get(k)` are get(k) (bytes) or
// get_object_code(k), a miss an empty optional; `del cache[k]` is remove(k), whose false
// is cuda.core's KeyError; `len(cache)` is entry_count(); FileStreamProgramCache is
// FileProgramCache. cuwrap's entries are the key and the value with a checksum, so sizes
// count the key and, for files, the entry's frame (kEntryOverhead).
//
// The key tests need NVRTC (the key holds its version) but no GPU; the cache tests need
// neither; test_cache_roundtrip_with_real_compilation loads what it compiled (a GPU).
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/program_cache.hpp>
#if CUWRAP_HAS_NVVM
#include <cuwrap/nvvm.hpp>
#endif

#include "nvrtc_fixture.hpp"
#include "temp_dir.hpp"
#include "toolkit_libraries.hpp"

#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <ios>
#include <latch>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

namespace fs = std::filesystem;
using cuwrap::CodeType;
using cuwrap::FileProgramCache;
using cuwrap::InMemoryProgramCache;
using cuwrap::ObjectCode;
using cuwrap::ProgramCache;
using cuwrap::ProgramOptions;
using cuwrap::TargetType;
using cuwrap::testing::TempDir;

// The bytes a file entry adds to its key and value: magic, two lengths, the checksum.
constexpr std::size_t kEntryOverhead = 10 + 8 + 8 + 8;

constexpr const char* kPtx = ".version 7.0";

// cuda.core's _opts: options for sm_80 (no device needed to resolve the architecture).
ProgramOptions opts() {
  ProgramOptions options;
  options.arch = "sm_80";
  return options;
}

// cuda.core's _make_key: a C++ compile of "a" to CUBIN unless told otherwise.
struct KeyArgs {
  std::string code = "a";
  CodeType code_type = CodeType::Cxx;
  ProgramOptions options = opts();
  TargetType target = TargetType::Cubin;
  std::vector<std::string> name_expressions{};
};

std::string make_key(const KeyArgs& args) {
  return cuwrap::make_program_cache_key(args.code, args.code_type, args.options, args.target,
                                        args.name_expressions);
}

std::string make_key() { return make_key(KeyArgs{}); }

// cuda.core's _fake_object_code: code made without the driver.
ObjectCode fake_object_code(std::string_view payload = "fake-cubin", std::string name = "unit") {
  return ObjectCode::from_parts(TargetType::Cubin, std::string(payload), std::move(name), {});
}

// The code of the ObjectCode entry under `key`, or nothing for a miss.
std::optional<std::string> code_of(ProgramCache& cache, std::string_view key) {
  const std::optional<ObjectCode> code = cache.get_object_code(key);
  if (!code) {
    return std::nullopt;
  }
  return std::string(code->code().begin(), code->code().end());
}

// A directory of its own for one test's cache, created private as FileProgramCache asks.
class CacheDir : public TempDir {
 public:
  explicit CacheDir(const std::string& name) : TempDir("program-cache-" + name) {
    fs::permissions(path(), fs::perms::owner_all, fs::perm_options::replace);
  }
  // The directory FileProgramCache opens (and creates): one level below, as tmp_path/"fc".
  fs::path fc() const { return path() / "fc"; }
};

// Make the file at `path` look `seconds` old (cuda.core sleeps between writes instead).
void set_age(const fs::path& path, int seconds) {
  fs::last_write_time(path, fs::file_time_type::clock::now() - std::chrono::seconds(seconds));
}

// The regular files under `dir` whose names start with `prefix`.
std::size_t count_files(const fs::path& dir, std::string_view prefix = "") {
  std::size_t count = 0;
  for (const auto& item : fs::directory_iterator(dir)) {
    if (item.is_regular_file() && item.path().filename().string().starts_with(prefix)) {
      ++count;
    }
  }
  return count;
}

void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// ---- ProgramCacheResource: the interface ------------------------------------------

// A cache implementing the whole interface, and four that leave one member out, to show
// which members a subclass must define.
struct CompleteCache : ProgramCache {
  std::optional<std::string> get(std::string_view /*key*/) override { return std::nullopt; }
  void put(std::string_view /*key*/, std::string_view /*value*/) override {}
  using ProgramCache::put;
  void clear() override {}
  std::size_t size_bytes() const override { return 0; }
};

struct WithoutGet : ProgramCache {
  void put(std::string_view /*key*/, std::string_view /*value*/) override {}
  void clear() override {}
  std::size_t size_bytes() const override { return 0; }
};

struct WithoutPut : ProgramCache {
  std::optional<std::string> get(std::string_view /*key*/) override { return std::nullopt; }
  void clear() override {}
  std::size_t size_bytes() const override { return 0; }
};

struct WithoutClear : ProgramCache {
  std::optional<std::string> get(std::string_view /*key*/) override { return std::nullopt; }
  void put(std::string_view /*key*/, std::string_view /*value*/) override {}
  std::size_t size_bytes() const override { return 0; }
};

struct WithoutSizeBytes : ProgramCache {
  std::optional<std::string> get(std::string_view /*key*/) override { return std::nullopt; }
  void put(std::string_view /*key*/, std::string_view /*value*/) override {}
  void clear() override {}
};

TEST(test_program_cache_cpu, test_program_cache_resource_is_abstract) {
  EXPECT_TRUE(std::is_abstract_v<ProgramCache>);
  EXPECT_FALSE(std::is_default_constructible_v<ProgramCache>);
  EXPECT_TRUE(std::has_virtual_destructor_v<ProgramCache>);
}

// cuda.core's abstract methods are __getitem__, __setitem__, __delitem__, __len__ and
// clear; cuwrap's interface is get, put, clear and size_bytes (remove and entry_count
// belong to the two caches), and, as in cuda.core, has no `contains`.
TEST(test_program_cache_cpu, test_program_cache_resource_requires_core_methods) {
  EXPECT_FALSE(std::is_abstract_v<CompleteCache>);
  EXPECT_TRUE(std::is_abstract_v<WithoutGet>);
  EXPECT_TRUE(std::is_abstract_v<WithoutPut>);
  EXPECT_TRUE(std::is_abstract_v<WithoutClear>);
  EXPECT_TRUE(std::is_abstract_v<WithoutSizeBytes>);
  CompleteCache cache;
  cache.put("k", fake_object_code());  // the ObjectCode form comes with the interface
  EXPECT_FALSE(cache.get_object_code("k").has_value());
}

// ---- make_program_cache_key -------------------------------------------------------

// cuda.core replaces ProgramOptions.as_bytes by one that raises; here an option the
// translation refuses: the key must not be made for what the compile refuses.
TEST(test_program_cache_cpu, test_make_program_cache_key_propagates_as_bytes_typeerror) {
  CUWRAP_REQUIRE_NVRTC();
  KeyArgs args;
  args.options.max_register_count = 0;
  try {
    static_cast<void>(make_key(args));
    ADD_FAILURE() << "a key was made for options the compile refuses";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("max_register_count"), std::string::npos) << e.what();
  }
}

TEST(test_program_cache_cpu, test_make_program_cache_key_is_deterministic) {
  CUWRAP_REQUIRE_NVRTC();
  for (const auto& [code_type, code] :
       {std::pair{CodeType::Cxx, "void k(){}"}, std::pair{CodeType::Ptx, kPtx}}) {
    SCOPED_TRACE(code);
    const KeyArgs args{.code = code, .code_type = code_type};
    EXPECT_EQ(make_key(args), make_key(args));
  }
}

// cuda.core's extra_digest cases are left out: cuwrap's key has no extra digest.
TEST(test_program_cache_cpu, test_make_program_cache_key_differs_on) {
  CUWRAP_REQUIRE_NVRTC();
  struct Case {
    const char* id;
    KeyArgs a;
    KeyArgs b;
  };
  std::vector<Case> cases;
  cases.push_back({"code", KeyArgs{.code = "a"}, KeyArgs{.code = "b"}});
  cases.push_back(
      {"target_type", KeyArgs{.target = TargetType::Ptx}, KeyArgs{.target = TargetType::Cubin}});
  KeyArgs sm90;
  sm90.options.arch = "sm_90";
  cases.push_back({"arch", KeyArgs{}, sm90});
  KeyArgs fast;
  fast.options.use_fast_math = true;
  cases.push_back({"option", fast, KeyArgs{}});
  KeyArgs name_a;
  name_a.options.name = "kernel-a";
  KeyArgs name_b;
  name_b.options.name = "kernel-b";
  cases.push_back({"options.name", name_a, name_b});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.id);
    EXPECT_NE(make_key(c.a), make_key(c.b));
  }
}

TEST(test_program_cache_cpu, test_make_program_cache_key_name_expressions_order_insensitive) {
  CUWRAP_REQUIRE_NVRTC();
  EXPECT_EQ(make_key(KeyArgs{.name_expressions = {"f", "g"}}),
            make_key(KeyArgs{.name_expressions = {"g", "f"}}));
  EXPECT_NE(make_key(KeyArgs{.name_expressions = {"f", "g"}}),
            make_key(KeyArgs{.name_expressions = {"f"}}));
}

template <class Code>
concept KeyableCode = requires(Code code, const ProgramOptions& options) {
  cuwrap::make_program_cache_key(code, CodeType::Cxx, options, TargetType::Cubin);
};

std::string key_error(const KeyArgs& args) {
  try {
    static_cast<void>(make_key(args));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(test_program_cache_cpu, test_make_program_cache_key_rejects) {
  CUWRAP_REQUIRE_NVRTC();
  // non_str_bytes_code: code is text; a number does not compile.
  static_assert(KeyableCode<std::string>);
  static_assert(!KeyableCode<int>);
  struct Case {
    const char* id;
    KeyArgs args;
    const char* match;
  };
  const std::vector<Case> cases = {
      // An enum class has int values outside its enumerators: no UB to make one.
      {"unknown_code_type", KeyArgs{.code_type = static_cast<CodeType>(42)}, "code_type"},
      {"unknown_target_type", KeyArgs{.target = static_cast<TargetType>(42)}, "TargetType"},
      {"ptx_cannot_ltoir",
       KeyArgs{.code = kPtx, .code_type = CodeType::Ptx, .target = TargetType::Ltoir},
       "PTX does not compile to TargetType::ltoir"},
      {"nvvm_cannot_cubin",
       KeyArgs{.code = "abc", .code_type = CodeType::Nvvm, .target = TargetType::Cubin},
       "NVVM IR does not compile to TargetType::cubin"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.id);
    const std::string error = key_error(c.args);
    EXPECT_NE(error.find(c.match), std::string::npos) << "error: '" << error << "'";
  }
}

// cuda.core pins the linker probe; cuwrap's key is built from what the compile tells the
// linker whatever the backend. C++'s bool fields have no None, so only `time` (True and
// a path there, any two paths here: the linker is told -time) has a case.
TEST(test_program_cache_cpu, test_make_program_cache_key_ptx_linker_equivalent_options_hash_same) {
  CUWRAP_REQUIRE_NVRTC();
  KeyArgs a{.code = kPtx, .code_type = CodeType::Ptx};
  a.options.time = "timing.csv";
  KeyArgs b = a;
  b.options.time = "other.csv";
  EXPECT_EQ(make_key(a), make_key(b));
  EXPECT_NE(make_key(a), make_key(KeyArgs{.code = kPtx, .code_type = CodeType::Ptx}))
      << "asking for -time is part of the key";
}

// cuda.core forces the nvJitLink backend; here it is the backend where nvJitLink loads.
TEST(test_program_cache_cpu,
     test_make_program_cache_key_ptx_driver_ignored_fields_still_matter_under_nvjitlink) {
  CUWRAP_REQUIRE_NVRTC();
  CUWRAP_REQUIRE_NVJITLINK();
  KeyArgs on{.code = kPtx, .code_type = CodeType::Ptx};
  on.options.ftz = true;
  KeyArgs off = on;
  off.options.ftz = false;
  EXPECT_NE(make_key(on), make_key(off));
}

// cuda.core swaps in a libNVVM of another version; cuwrap's key names libNVVM's
// version (as the NVRTC version, tests/runtime), so another libNVVM is another key.
TEST(test_program_cache_cpu, test_make_program_cache_key_nvvm_library_version_changes_key) {
  CUWRAP_REQUIRE_NVVM();
#if CUWRAP_HAS_NVVM
  const std::string key =
      make_key(KeyArgs{.code = "abc", .code_type = CodeType::Nvvm, .target = TargetType::Ptx});
  const auto [major, minor] = cuwrap::nvvm::nvvmVersion();
  EXPECT_NE(key.find("nvvm " + std::to_string(major) + "." + std::to_string(minor)),
            std::string::npos);
#endif
}

TEST(test_program_cache_cpu,
     test_make_program_cache_key_ptx_accepts_driver_linker_unsupported_with_nvjitlink) {
  CUWRAP_REQUIRE_NVRTC();
  CUWRAP_REQUIRE_NVJITLINK();
  KeyArgs args{.code = kPtx, .code_type = CodeType::Ptx};
  args.options.time = "timing.csv";
  EXPECT_NO_THROW(static_cast<void>(make_key(args)));
}

TEST(test_program_cache_cpu, test_make_program_cache_key_accepts_nvrtc_name_without_dir_component) {
  CUWRAP_REQUIRE_NVRTC();
  for (const char* name : {"foo.cu", "default_program", ""}) {
    SCOPED_TRACE(name);
    KeyArgs args;
    args.options.name = name;
    EXPECT_NO_THROW(static_cast<void>(make_key(args)));
  }
}

// Python's False and range() cases have no C++ form: the fields are vectors.
TEST(test_program_cache_cpu, test_make_program_cache_key_accepts_empty_external_content) {
  CUWRAP_REQUIRE_NVRTC();
  KeyArgs include_path;
  include_path.options.include_path = {};
  KeyArgs pre_include;
  pre_include.options.pre_include = {};
  for (const KeyArgs& args : {include_path, pre_include}) {
    std::string key;
    EXPECT_NO_THROW(key = make_key(args));
    EXPECT_EQ(key, make_key()) << "no external content: the key of no options";
  }
}

// Python's False values have no C++ form (the fields are optional text); an empty text
// is refused for its side effect before the text's own check.
TEST(test_program_cache_cpu, test_make_program_cache_key_rejects_side_effect_options_nvrtc) {
  CUWRAP_REQUIRE_NVRTC();
  struct Case {
    const char* id;
    ProgramOptions options;
  };
  std::vector<Case> cases;
  ProgramOptions create_pch = opts();
  create_pch.create_pch = "out.pch";
  cases.push_back({"create_pch", create_pch});
  ProgramOptions create_pch_empty = opts();
  create_pch_empty.create_pch = "";
  cases.push_back({"create_pch_empty_string", create_pch_empty});
  ProgramOptions time = opts();
  time.time = "timing.csv";
  cases.push_back({"time", time});
  ProgramOptions trace = opts();
  trace.fdevice_time_trace = "trace.json";
  cases.push_back({"fdevice_time_trace", trace});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.id);
    const std::string error = key_error(KeyArgs{.options = c.options});
    EXPECT_NE(error.find("side effect"), std::string::npos) << "error: '" << error << "'";
  }
}

TEST(test_program_cache_cpu, test_make_program_cache_key_accepts_side_effect_options_for_ptx) {
  CUWRAP_REQUIRE_NVRTC();
  KeyArgs args{.code = kPtx, .code_type = CodeType::Ptx};
  args.options.time = "whatever.csv";
  EXPECT_NO_THROW(static_cast<void>(make_key(args)));
}

// ---- FileProgramCache ----------------------------------------------------------------

TEST(test_program_cache_cpu, test_filestream_cache_empty_on_create) {
  const CacheDir dir("empty_on_create");
  FileProgramCache cache(dir.fc());
  EXPECT_EQ(cache.entry_count(), 0U);
  EXPECT_EQ(cache.size_bytes(), 0U);
  EXPECT_FALSE(cache.get("nope").has_value());
  EXPECT_FALSE(cache.get_object_code("nope").has_value());
}

TEST(test_program_cache_cpu, test_filestream_cache_roundtrip) {
  const CacheDir dir("roundtrip");
  FileProgramCache cache(dir.fc());
  cache.put("k1", fake_object_code("v1", "x"));
  EXPECT_EQ(code_of(cache, "k1"), "v1");
}

TEST(test_program_cache_cpu, test_filestream_cache_delete) {
  const CacheDir dir("delete");
  FileProgramCache cache(dir.fc());
  cache.put("k", fake_object_code());
  EXPECT_TRUE(cache.remove("k"));
  EXPECT_FALSE(cache.get("k").has_value());
  EXPECT_FALSE(cache.remove("k")) << "cuda.core: KeyError";
}

TEST(test_program_cache_cpu, test_filestream_cache_overwrite_replaces_value) {
  const CacheDir dir("overwrite");
  {
    FileProgramCache cache(dir.fc());
    cache.put("k", std::string(100, 'x'));
    EXPECT_EQ(cache.get("k"), std::string(100, 'x'));
    cache.put("k", std::string(50, 'y'));
    EXPECT_EQ(cache.get("k"), std::string(50, 'y'));
    EXPECT_EQ(cache.entry_count(), 1U);
  }
  EXPECT_EQ(count_files(dir.fc()), 1U) << "one entry file, no leftover";
}

TEST(test_program_cache_cpu, test_filestream_cache_len_counts_all) {
  const CacheDir dir("len_counts_all");
  FileProgramCache cache(dir.fc());
  cache.put("a", fake_object_code("1"));
  cache.put("b", fake_object_code("2"));
  cache.put("c", fake_object_code("3"));
  EXPECT_EQ(cache.entry_count(), 3U);
}

TEST(test_program_cache_cpu, test_filestream_cache_clear) {
  const CacheDir dir("clear");
  FileProgramCache cache(dir.fc());
  cache.put("a", fake_object_code());
  ASSERT_EQ(cache.entry_count(), 1U);
  cache.clear();
  EXPECT_EQ(cache.entry_count(), 0U);
  EXPECT_FALSE(cache.get("a").has_value());
}

TEST(test_program_cache_cpu, test_filestream_cache_persists_across_reopen) {
  const CacheDir dir("persists");
  {
    FileProgramCache cache(dir.fc());
    cache.put("k", fake_object_code("persisted"));
  }
  FileProgramCache cache(dir.fc());
  EXPECT_EQ(code_of(cache, "k"), "persisted");
}

// cuda.core replaces unlink by one that raises; here the directory is made read-only,
// which stops every user but root.
TEST(test_program_cache_cpu, test_filestream_cache_unlink_propagates_non_windows_permission_error) {
  if (::geteuid() == 0) {
    GTEST_SKIP() << "root removes files from a read-only directory";
  }
  const CacheDir dir("unlink_permission");
  FileProgramCache cache(dir.fc());
  cache.put("k", fake_object_code("v"));
  fs::permissions(dir.fc(), fs::perms::owner_read | fs::perms::owner_exec,
                  fs::perm_options::replace);
  EXPECT_THROW(static_cast<void>(cache.remove("k")), std::system_error);
  fs::permissions(dir.fc(), fs::perms::owner_all, fs::perm_options::replace);
  EXPECT_EQ(code_of(cache, "k"), "v");
}

// cuda.core makes the rename raise; here the rename cannot replace what is at the entry's
// path (a directory that is not empty). put() does not throw (it never does for storage):
// it reports a warning, and no entry nor temporary file is left.
TEST(test_program_cache_cpu, test_filestream_cache_atomic_no_half_written_file) {
  const CacheDir dir("atomic");
  std::string warnings;
  FileProgramCache cache(
      dir.fc(), FileProgramCache::kNoSizeCap,
      FileProgramCache::WarningHandler(
          [](const std::string& message, void* out) { *static_cast<std::string*>(out) += message; },
          &warnings));
  fs::create_directories(cache.entry_path("k") / "in-the-way");
  cache.put("k", fake_object_code("v"));
  EXPECT_NE(warnings.find("cannot write"), std::string::npos) << warnings;
  EXPECT_FALSE(cache.get("k").has_value());
  EXPECT_FALSE(cache.get_object_code("k").has_value());
  EXPECT_EQ(count_files(dir.fc(), ".tmp-"), 0U) << "the temporary file is removed";
}

TEST(test_program_cache_cpu, test_filestream_cache_accepts_bytes_directly) {
  const CacheDir dir("accepts_bytes");
  FileProgramCache cache(dir.fc());
  cache.put("k", std::string_view("raw"));
  EXPECT_EQ(cache.get("k"), "raw");
}

template <class Cache, class Key, class Value>
concept Puttable = requires(Cache& cache, Key key, Value value) {
  cache.put(key, value);
};

template <class Cache, class Key>
concept Gettable = requires(Cache& cache, Key key) {
  cache.get(key);
};

// A value is bytes or an ObjectCode: anything else does not compile (a C++ string is
// bytes, so cuda.core's str value has no counterpart).
TEST(test_program_cache_cpu, test_filestream_cache_rejects_non_bytes_non_object_code) {
  static_assert(Puttable<FileProgramCache, std::string_view, std::string>);
  static_assert(Puttable<FileProgramCache, std::string_view, ObjectCode>);
  static_assert(!Puttable<FileProgramCache, std::string_view, int>);
  static_assert(!Puttable<FileProgramCache, std::string_view, std::vector<int>>);
  const CacheDir dir("rejects_value");
  FileProgramCache cache(dir.fc());
  EXPECT_EQ(cache.entry_count(), 0U);
}

// ObjectCode::from_file reads the file when it is made, so the cache holds the bytes.
TEST(test_program_cache_cpu, test_filestream_cache_accepts_path_backed_object_code) {
  const CacheDir dir("path_backed");
  const fs::path src = dir.path() / "src.cubin";
  write_file(src, "hello-cubin-bytes");
  const ObjectCode path_backed = ObjectCode::from_file(src);
  {
    FileProgramCache cache(dir.fc());
    cache.put("k", path_backed);
    EXPECT_EQ(code_of(cache, "k"), "hello-cubin-bytes");
  }
  fs::remove(src);
  FileProgramCache cache(dir.fc());
  EXPECT_EQ(code_of(cache, "k"), "hello-cubin-bytes");
}

// cuwrap reads a file when the ObjectCode is made, so a vanished file is reported there,
// before any cache is involved, naming the path.
TEST(test_program_cache_cpu, test_filestream_cache_path_backed_object_code_missing_file_message) {
  const CacheDir dir("path_backed_missing");
  const fs::path src = dir.path() / "vanished.cubin";
  write_file(src, "data");
  fs::remove(src);
  try {
    static_cast<void>(ObjectCode::from_file(src));
    ADD_FAILURE() << "a missing file was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(src.string()), std::string::npos) << e.what();
  }
  FileProgramCache cache(dir.fc());
  EXPECT_EQ(cache.entry_count(), 0U);
}

// A size is unsigned: cuda.core's -1 has no C++ form (and -1 converted is kNoSizeCap).
TEST(test_program_cache_cpu, test_filestream_cache_rejects_non_positive_size_cap) {
  const CacheDir dir("size_cap_zero");
  try {
    FileProgramCache cache(dir.fc(), 0);
    ADD_FAILURE() << "a size cap of 0 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("max_bytes must be > 0"), std::string::npos) << e.what();
  }
}

// cuwrap's temporary files are named ".tmp-..." in the cache directory (cuda.core's are
// in tmp/); ten minutes make one stale.
TEST(test_program_cache_cpu, test_filestream_cache_sweeps_stale_tmp_files_on_open) {
  const CacheDir dir("sweeps_stale");
  { FileProgramCache cache(dir.fc()); }
  const fs::path young = dir.fc() / ".tmp-young";
  write_file(young, "in-flight");
  const fs::path ancient = dir.fc() / ".tmp-ancient";
  write_file(ancient, "crashed-writer-leftover");
  set_age(ancient, 10 * 60 + 60);
  FileProgramCache cache(dir.fc());
  EXPECT_TRUE(fs::exists(young)) << "a young temporary file must not be swept";
  EXPECT_FALSE(fs::exists(ancient)) << "an ancient temporary file must be swept";
}

TEST(test_program_cache_cpu, test_filestream_cache_clear_preserves_young_tmp_files) {
  const CacheDir dir("clear_young_tmp");
  {
    FileProgramCache cache(dir.fc());
    cache.put("k", fake_object_code("v"));
  }
  const fs::path young = dir.fc() / ".tmp-young";
  write_file(young, "in-flight");
  const fs::path ancient = dir.fc() / ".tmp-ancient";
  write_file(ancient, "crashed");
  FileProgramCache cache(dir.fc());
  set_age(ancient, 10 * 60 + 60);  // after the open, so that clear() is what sweeps it
  cache.clear();
  EXPECT_EQ(cache.entry_count(), 0U);
  EXPECT_TRUE(fs::exists(young));
  EXPECT_FALSE(fs::exists(ancient));
}

TEST(test_program_cache_cpu, test_filestream_cache_clear_does_not_break_concurrent_writer) {
  const CacheDir dir("clear_concurrent_writer");
  FileProgramCache writer(dir.fc());
  writer.put("seed", fake_object_code("seed"));
  // A write in flight: its temporary file exists, its rename has not run yet.
  const fs::path inflight = dir.fc() / ".tmp-inflight";
  write_file(inflight, "in-flight payload");
  {
    FileProgramCache other(dir.fc());
    other.clear();
  }
  const fs::path target = writer.entry_path("k");
  fs::rename(inflight, target);  // throws if clear() took the temporary file
  EXPECT_TRUE(fs::exists(target));
  EXPECT_FALSE(writer.get("seed").has_value());
}

TEST(test_program_cache_cpu, test_filestream_cache_size_cap_counts_tmp_files) {
  const std::size_t cap = 4000;
  const CacheDir dir("size_cap_counts_tmp");
  {
    FileProgramCache cache(dir.fc(), cap);
    cache.put("a", fake_object_code(std::string(1500, 'A'), "a"));
    set_age(cache.entry_path("a"), 30);
    cache.put("b", fake_object_code(std::string(1500, 'B'), "b"));
    set_age(cache.entry_path("b"), 20);
    ASSERT_EQ(cache.entry_count(), 2U) << "the cap must hold both before the test";
  }
  write_file(dir.fc() / ".tmp-leftover", std::string(2500, 'X'));
  FileProgramCache cache(dir.fc(), cap);
  cache.put("c", fake_object_code(std::string(200, 'C'), "c"));
  EXPECT_FALSE(cache.get("a").has_value()) << "the temporary file's bytes count";
  EXPECT_TRUE(cache.get("c").has_value());
}

TEST(test_program_cache_cpu, test_filestream_cache_handles_long_keys) {
  const CacheDir dir("long_keys");
  FileProgramCache cache(dir.fc());
  const std::string long_key_b(4096, 'x');
  const std::string long_key_s(4096, 'y');
  cache.put(long_key_b, fake_object_code("b", "nb"));
  cache.put(long_key_s, fake_object_code("s", "ns"));
  EXPECT_EQ(code_of(cache, long_key_b), "b");
  EXPECT_EQ(code_of(cache, long_key_s), "s");
  EXPECT_EQ(cache.entry_path(long_key_b).filename().string().size(), 64U)
      << "a fixed-length name: the SHA-256 of the key";
}

TEST(test_program_cache_cpu, test_filestream_cache_size_cap_evicts_oldest) {
  const std::size_t cap = 3000;
  const CacheDir dir("size_cap_evicts_oldest");
  {
    FileProgramCache cache(dir.fc(), cap);
    cache.put("a", std::string(2000, 'A'));
    set_age(cache.entry_path("a"), 30);
    cache.put("b", std::string(2000, 'B'));
    set_age(cache.entry_path("b"), 20);
    cache.put("c", std::string(2000, 'C'));
  }
  FileProgramCache cache(dir.fc(), cap);
  EXPECT_FALSE(cache.get("a").has_value());
  EXPECT_TRUE(cache.get("c").has_value());
}

// cuwrap orders entries by modification time, which a hit refreshes (cuda.core: atime).
TEST(test_program_cache_cpu, test_filestream_cache_atime_lru_promotes_recently_read) {
  const std::size_t cap = 5000;
  const CacheDir dir("lru_promotes_read");
  {
    FileProgramCache cache(dir.fc(), cap);
    cache.put("a", std::string(2000, 'A'));
    set_age(cache.entry_path("a"), 30);
    cache.put("b", std::string(2000, 'B'));
    set_age(cache.entry_path("b"), 20);
    ASSERT_TRUE(cache.get("a").has_value());  // a is now the most recently used
    cache.put("c", std::string(2000, 'C'));
  }
  FileProgramCache cache(dir.fc(), cap);
  EXPECT_FALSE(cache.get("b").has_value());
  EXPECT_TRUE(cache.get("a").has_value());
  EXPECT_TRUE(cache.get("c").has_value());
}

TEST(test_program_cache_cpu, test_filestream_cache_unbounded_by_default) {
  const CacheDir dir("unbounded");
  FileProgramCache cache(dir.fc());
  EXPECT_EQ(cache.max_bytes(), FileProgramCache::kNoSizeCap);
  for (int i = 0; i < 20; ++i) {
    cache.put("k" + std::to_string(i),
              fake_object_code(std::string(1024, 'X'), "n" + std::to_string(i)));
  }
  EXPECT_EQ(cache.entry_count(), 20U);
}

// cuda.core counts calls of its private eviction pass; here its effect: past the cap,
// a write evicts.
TEST(test_program_cache_cpu, test_filestream_cache_writes_trigger_scan_when_over_cap) {
  const CacheDir dir("over_cap");
  FileProgramCache cache(dir.fc(), 300);
  cache.put("a", std::string(200, 'a'));
  ASSERT_EQ(cache.entry_count(), 1U);
  cache.put("b", std::string(200, 'b'));
  EXPECT_EQ(cache.entry_count(), 1U);
  EXPECT_LE(cache.size_bytes(), 300U);
}

// cuda.core's running size total must follow an entry removed behind its back; cuwrap
// keeps no total (it lists the directory), so the size is the disk's and eviction
// counts what is there.
TEST(test_program_cache_cpu, test_filestream_cache_tracker_reconciles_after_external_drift) {
  const CacheDir dir("external_drift");
  FileProgramCache cache(dir.fc(), 1000);
  cache.put("a", std::string(400, 'A'));
  cache.put("b", std::string(400, 'B'));
  EXPECT_EQ(cache.size_bytes(), 2 * (kEntryOverhead + 1 + 400));
  fs::remove(cache.entry_path("a"));
  set_age(cache.entry_path("b"), 20);
  cache.put("c", std::string(700, 'C'));
  EXPECT_LE(cache.size_bytes(), 1100U);
  EXPECT_TRUE(cache.get("c").has_value());
}

// ---- end to end: NVRTC through the file cache, loaded by the driver -----------------

class test_program_cache_gpu : public cuwrap::testing::DeviceNvrtcTest {};

TEST_F(test_program_cache_gpu, test_cache_roundtrip_with_real_compilation) {
  const std::string code = R"(extern "C" __global__ void my_kernel() {})";
  ProgramOptions options;
  options.name = "cached_kernel";
  cuwrap::Program program(code, CodeType::Cxx, options);
  const ObjectCode compiled = program.compile(TargetType::Cubin);
  program.close();
  const std::string key =
      cuwrap::make_program_cache_key(code, CodeType::Cxx, options, TargetType::Cubin);
  const CacheDir dir("real_compilation");
  {
    FileProgramCache cache(dir.fc());
    EXPECT_FALSE(cache.get_object_code(key).has_value());
    cache.put(key, compiled);
  }
  std::optional<std::string> cached_bytes;
  {
    FileProgramCache cache(dir.fc());
    cached_bytes = code_of(cache, key);
  }
  ASSERT_TRUE(cached_bytes.has_value());
  EXPECT_EQ(*cached_bytes, std::string(compiled.code().begin(), compiled.code().end()));
  const ObjectCode rebuilt =
      ObjectCode::from_cubin(std::as_bytes(std::span(*cached_bytes)), "cached_kernel");
  EXPECT_NO_THROW(static_cast<void>(rebuilt.get_kernel("my_kernel")));
}

// ---- InMemoryProgramCache -----------------------------------------------------------

TEST(test_program_cache_cpu, test_inmemory_cache_empty_on_create) {
  InMemoryProgramCache cache;
  EXPECT_EQ(cache.entry_count(), 0U);
  EXPECT_FALSE(cache.get("nope").has_value());
  EXPECT_FALSE(cache.get_object_code("nope").has_value());
}

TEST(test_program_cache_cpu, test_inmemory_cache_roundtrip_object_code) {
  InMemoryProgramCache cache;
  cache.put("k1", fake_object_code("v1", "x"));
  EXPECT_EQ(code_of(cache, "k1"), "v1");
}

TEST(test_program_cache_cpu, test_inmemory_cache_accepts_bytes_directly) {
  InMemoryProgramCache cache;
  cache.put("k", std::string_view("raw-payload"));
  EXPECT_EQ(cache.get("k"), "raw-payload");
}

TEST(test_program_cache_cpu, test_inmemory_cache_accepts_path_backed_object_code) {
  const CacheDir dir("inmemory_path_backed");
  const std::string payload(
      "\x7f"
      "ELF\x02\x01"
      "fake-cubin-bytes");
  const fs::path src = dir.path() / "src.cubin";
  write_file(src, payload);
  const ObjectCode obj = ObjectCode::from_file(src);
  InMemoryProgramCache cache;
  cache.put("k", obj);
  write_file(src, "changed");
  EXPECT_EQ(code_of(cache, "k"), payload);
}

// A key is text: a number does not compile (cuda.core: TypeError).
TEST(test_program_cache_cpu, test_inmemory_cache_rejects_non_str_non_bytes_key) {
  static_assert(Puttable<InMemoryProgramCache, std::string, std::string_view>);
  static_assert(!Puttable<InMemoryProgramCache, int, std::string_view>);
  static_assert(Gettable<InMemoryProgramCache, std::string>);
  static_assert(!Gettable<InMemoryProgramCache, int>);
  InMemoryProgramCache cache;
  EXPECT_EQ(cache.entry_count(), 0U);
}

TEST(test_program_cache_cpu, test_inmemory_cache_rejects_non_bytes_non_object_code_value) {
  static_assert(Puttable<InMemoryProgramCache, std::string_view, std::string>);
  static_assert(Puttable<InMemoryProgramCache, std::string_view, ObjectCode>);
  static_assert(!Puttable<InMemoryProgramCache, std::string_view, int>);
  static_assert(!Puttable<InMemoryProgramCache, std::string_view, std::vector<int>>);
  InMemoryProgramCache cache;
  EXPECT_EQ(cache.entry_count(), 0U);
}

TEST(test_program_cache_cpu, test_inmemory_cache_delete) {
  InMemoryProgramCache cache;
  cache.put("k", fake_object_code());
  EXPECT_TRUE(cache.remove("k"));
  EXPECT_FALSE(cache.get("k").has_value());
  EXPECT_EQ(cache.size_bytes(), 0U);
  EXPECT_FALSE(cache.remove("k")) << "cuda.core: KeyError";
}

TEST(test_program_cache_cpu, test_inmemory_cache_len_counts_all) {
  InMemoryProgramCache cache;
  cache.put("a", fake_object_code("1"));
  cache.put("b", fake_object_code("2"));
  cache.put("c", fake_object_code("3"));
  EXPECT_EQ(cache.entry_count(), 3U);
}

TEST(test_program_cache_cpu, test_inmemory_cache_clear) {
  InMemoryProgramCache cache;
  cache.put("a", fake_object_code());
  cache.put("b", fake_object_code());
  cache.clear();
  EXPECT_EQ(cache.entry_count(), 0U);
  EXPECT_FALSE(cache.get("a").has_value());
}

TEST(test_program_cache_cpu, test_inmemory_cache_get_returns_default_on_miss) {
  InMemoryProgramCache cache;
  EXPECT_FALSE(cache.get("missing").has_value());
  EXPECT_EQ(cache.get("missing").value_or("fallback"), "fallback");
}

TEST(test_program_cache_cpu, test_inmemory_cache_get_returns_value_on_hit) {
  InMemoryProgramCache cache;
  cache.put("k", std::string_view("v"));
  EXPECT_EQ(cache.get("k"), "v");
}

// cuwrap counts keys in the size too.
TEST(test_program_cache_cpu, test_inmemory_cache_overwrite_replaces_value_and_updates_size) {
  InMemoryProgramCache cache(1000);
  cache.put("k", std::string(100, 'x'));
  EXPECT_EQ(cache.get("k"), std::string(100, 'x'));
  cache.put("k", std::string(50, 'y'));
  EXPECT_EQ(cache.get("k"), std::string(50, 'y'));
  EXPECT_EQ(cache.entry_count(), 1U);
  EXPECT_EQ(cache.size_bytes(), 1U + 50U);
}

TEST(test_program_cache_cpu, test_inmemory_cache_rejects_non_positive_size_cap) {
  try {
    InMemoryProgramCache cache(0);
    ADD_FAILURE() << "a size cap of 0 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("max_bytes must be > 0"), std::string::npos) << e.what();
  }
}

TEST(test_program_cache_cpu, test_inmemory_cache_size_cap_evicts_oldest) {
  InMemoryProgramCache cache(250);
  cache.put("a", std::string(100, 'a'));
  cache.put("b", std::string(100, 'b'));
  cache.put("c", std::string(100, 'c'));
  EXPECT_FALSE(cache.get("a").has_value());
  EXPECT_TRUE(cache.get("b").has_value());
  EXPECT_TRUE(cache.get("c").has_value());
}

TEST(test_program_cache_cpu, test_inmemory_cache_read_promotes_lru) {
  InMemoryProgramCache cache(250);
  cache.put("a", std::string(100, 'a'));
  cache.put("b", std::string(100, 'b'));
  ASSERT_TRUE(cache.get("a").has_value());
  cache.put("c", std::string(100, 'c'));
  EXPECT_TRUE(cache.get("a").has_value());
  EXPECT_FALSE(cache.get("b").has_value());
  EXPECT_TRUE(cache.get("c").has_value());
}

TEST(test_program_cache_cpu, test_inmemory_cache_oversized_write_evicts_itself) {
  InMemoryProgramCache cache(10);
  cache.put("big", std::string(100, 'x'));
  EXPECT_FALSE(cache.get("big").has_value());
  EXPECT_EQ(cache.entry_count(), 0U);
}

TEST(test_program_cache_cpu, test_inmemory_cache_unbounded_when_max_size_none) {
  InMemoryProgramCache cache;
  EXPECT_EQ(cache.max_bytes(), InMemoryProgramCache::kNoSizeCap);
  for (int i = 0; i < 50; ++i) {
    cache.put("k" + std::to_string(i), std::string(1024, 'x'));
  }
  EXPECT_EQ(cache.entry_count(), 50U);
}

// cuda.core compares its count with its private table; here the entries that answer
// must be those counted, and their bytes the size.
TEST(test_program_cache_cpu, test_inmemory_cache_concurrent_threads_stay_consistent) {
  constexpr int kWriters = 4;
  constexpr int kReaders = 4;
  constexpr int kOps = 200;
  const std::string payload(64, 'v');
  InMemoryProgramCache cache(4096);
  const auto key = [](int tid, int i) {
    return "w" + std::to_string(tid) + "-" + std::to_string(i);
  };
  std::latch start(kWriters + kReaders);
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kOps; ++i) {
        cache.put(key(t, i), payload);
      }
    });
  }
  for (int t = 0; t < kReaders; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (int i = 0; i < kOps; ++i) {
        static_cast<void>(cache.get(key(i % kWriters, i)));
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_LE(cache.size_bytes(), 4096U);
  std::size_t found = 0;
  std::size_t bytes = 0;
  for (int t = 0; t < kWriters; ++t) {
    for (int i = 0; i < kOps; ++i) {
      const std::string k = key(t, i);
      if (const std::optional<std::string> value = cache.get(k)) {
        EXPECT_EQ(*value, payload);
        ++found;
        bytes += k.size() + value->size();
      }
    }
  }
  EXPECT_EQ(found, cache.entry_count());
  EXPECT_EQ(bytes, cache.size_bytes());
  EXPECT_GT(found, 0U);
}

}  // namespace
