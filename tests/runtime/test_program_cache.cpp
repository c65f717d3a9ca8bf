// ProgramCache: the key covers every input, InMemory and File caches evict least
// recently used entries, file entries survive concurrent writers and reject damage, and
// the cache directory must be private. No GPU needed: NVRTC compiles for "sm_90".
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/nvrtc.hpp>
#include <cuwrap/program_cache.hpp>

#include <gtest/gtest.h>

#include "kernel_sources.hpp"
#include "toolkit_libraries.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using cuwrap::CodeType;
using cuwrap::FileProgramCache;
using cuwrap::InMemoryProgramCache;
using cuwrap::ObjectCode;
using cuwrap::Program;
using cuwrap::ProgramCache;
using cuwrap::ProgramOptions;
using cuwrap::TargetType;

constexpr const char* kCacheSource = R"(
extern "C" __global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }
template <class T> __global__ void fill(T* x, T v) { x[threadIdx.x] = v; }
)";

ProgramOptions cache_sm90() {
  ProgramOptions options;
  options.arch = "sm_90";
  return options;
}

// A fresh private directory under the system temporary directory, removed afterwards.
class CacheTempDir {
 public:
  CacheTempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() /
            ("cuwrap-cache-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directory(path_);
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::replace);
  }
  CacheTempDir(const CacheTempDir&) = delete;
  CacheTempDir& operator=(const CacheTempDir&) = delete;
  ~CacheTempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::replace, ec);
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::vector<fs::path> entry_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& item : fs::directory_iterator(dir)) {
    files.push_back(item.path());
  }
  return files;
}

// ---- key --------------------------------------------------------------------------

TEST(ProgramCacheKey, ChangesWithEveryInput) {
  CUWRAP_REQUIRE_NVRTC();
  Program base(kCacheSource, CodeType::Cxx, cache_sm90());
  const std::string key = base.program_cache_key(TargetType::Cubin);
  EXPECT_EQ(key, base.program_cache_key(TargetType::Cubin)) << "the key must be deterministic";
  EXPECT_NE(key, base.program_cache_key(TargetType::Ptx));
  const std::vector<std::string> names{"fill<int>"};
  EXPECT_NE(key, base.program_cache_key(TargetType::Cubin, names));

  std::vector<ProgramOptions> variants(6, cache_sm90());
  variants[0].arch = "sm_80";
  variants[1].define_macro = {"N=2"};
  variants[2].use_fast_math = true;
  variants[3].std = "c++17";
  variants[4].name = "other";
  variants[5].extra_options = {"--extra-device-vectorization"};
  for (const ProgramOptions& options : variants) {
    Program p(kCacheSource, CodeType::Cxx, options);
    EXPECT_NE(key, p.program_cache_key(TargetType::Cubin));
  }
  Program ptx_code(".version 8.0\n.target sm_90\n.address_size 64\n", CodeType::Ptx, cache_sm90());
  const std::string ptx_key = ptx_code.program_cache_key(TargetType::Cubin);
  EXPECT_TRUE(ptx_key.find("nvJitLink ") != std::string::npos ||
              ptx_key.find("driver linker") != std::string::npos)
      << "the assembler's version decides PTX output";
  Program other_source(std::string(kCacheSource) + "\n", CodeType::Cxx, cache_sm90());
  EXPECT_NE(key, other_source.program_cache_key(TargetType::Cubin));
  const auto [major, minor] = cuwrap::nvrtc::nvrtcVersion();
  EXPECT_NE(key.find("nvrtc " + std::to_string(major) + "." + std::to_string(minor)),
            std::string::npos);
  EXPECT_NE(key.find("driver "), std::string::npos);
}

TEST(ProgramCacheKey, TheFreeFunctionIsTheKeyCompileUses) {
  CUWRAP_REQUIRE_NVRTC();
  const std::vector<std::string> names{"fill<int>"};
  Program p(kCacheSource, CodeType::Cxx, cache_sm90());
  EXPECT_EQ(cuwrap::make_program_cache_key(kCacheSource, CodeType::Cxx, cache_sm90(),
                                           TargetType::Cubin, names),
            p.program_cache_key(TargetType::Cubin, names));
  EXPECT_EQ(cuwrap::make_program_cache_key(kCacheSource, CodeType::Cxx, cache_sm90(),
                                           TargetType::Ptx, {"fill<int>"}),
            p.program_cache_key(TargetType::Ptx, names));
  EXPECT_NE(
      cuwrap::make_program_cache_key(kCacheSource, CodeType::Cxx, cache_sm90(), TargetType::Cubin),
      cuwrap::make_program_cache_key(kCacheSource, CodeType::Ptx, cache_sm90(), TargetType::Cubin))
      << "the code type is part of the key";
}

std::string key_error(CodeType type, TargetType target, std::vector<std::string> names = {}) {
  try {
    cuwrap::make_program_cache_key(kCacheSource, type, cache_sm90(), target, names);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ProgramCacheKey, RefusesWhatNoCompileCouldDo) {
  EXPECT_NE(
      key_error(CodeType::Nvvm, TargetType::Cubin).find("NVVM IR does not compile to TargetType::"),
      std::string::npos);
  EXPECT_NE(key_error(CodeType::Nvvm, TargetType::Ptx, {"f"}).find("the code is NVVM IR"),
            std::string::npos);
  EXPECT_NE(
      key_error(CodeType::Cxx, TargetType::Fatbin).find("C++ does not compile to TargetType::"),
      std::string::npos);
  EXPECT_NE(key_error(CodeType::Ptx, TargetType::Ltoir).find("PTX does not compile"),
            std::string::npos);
  EXPECT_NE(key_error(CodeType::Ptx, TargetType::Cubin, {"f"}).find("need C++ source"),
            std::string::npos);
  EXPECT_NE(
      key_error(CodeType::Cxx, TargetType::Cubin, {"f", ""}).find("name_expressions[1] is empty"),
      std::string::npos);
}

// ---- ObjectCode entries: put(key, code) and compile share one format ----------------

TEST(ProgramCacheObjectCode, PutThenCompileWithTheSameKeyHits) {
  CUWRAP_REQUIRE_NVRTC();
  InMemoryProgramCache cache(std::size_t{16} << 20);
  const std::vector<std::string> names{"fill<int>"};
  // Compiled elsewhere (no cache), stored by hand under the key of the compile below.
  Program elsewhere(kCacheSource, CodeType::Cxx, cache_sm90());
  const ObjectCode compiled = elsewhere.compile(TargetType::Ptx, names);
  // A marker in the code shows that the compile below returns the stored entry.
  std::string marked(compiled.code().data(), compiled.code().size());
  marked += "\n// stored by put\n";
  const ObjectCode stored =
      ObjectCode::from_parts(TargetType::Ptx, marked, "stored", compiled.name_expressions());
  const std::string key = cuwrap::make_program_cache_key(kCacheSource, CodeType::Cxx, cache_sm90(),
                                                         TargetType::Ptx, names);
  cache.put(key, stored);
  EXPECT_EQ(cache.entry_count(), 1U);
  Program p(kCacheSource, CodeType::Cxx, cache_sm90());
  std::string log = "untouched";
  const ObjectCode hit = p.compile(TargetType::Ptx, names, {.log = &log, .cache = &cache});
  EXPECT_EQ(std::string(hit.code().data(), hit.code().size()), marked);
  EXPECT_EQ(hit.name(), "stored");
  EXPECT_EQ(hit.lowered_name("fill<int>"), compiled.lowered_name("fill<int>"));
  EXPECT_EQ(log, "");  // put stores no compile log
  EXPECT_EQ(cache.entry_count(), 1U);
}

TEST(ProgramCacheObjectCode, CompileThenGetReturnsTheObjectCode) {
  CUWRAP_REQUIRE_NVRTC();
  CacheTempDir dir;
  FileProgramCache cache(dir.path());  // no size cap
  EXPECT_EQ(cache.max_bytes(), FileProgramCache::kNoSizeCap);
  const std::vector<std::string> names{"fill<float>"};
  Program p(kCacheSource, CodeType::Cxx, cache_sm90());
  const ObjectCode compiled = p.compile(TargetType::Cubin, names, {.cache = &cache});
  const std::optional<ObjectCode> got = cache.get_object_code(cuwrap::make_program_cache_key(
      kCacheSource, CodeType::Cxx, cache_sm90(), TargetType::Cubin, names));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->code_type(), TargetType::Cubin);
  ASSERT_EQ(got->code().size(), compiled.code().size());
  EXPECT_TRUE(std::equal(compiled.code().begin(), compiled.code().end(), got->code().begin()));
  EXPECT_EQ(got->lowered_name("fill<float>"), compiled.lowered_name("fill<float>"));
  // What get returns goes back in with put, and a second cache reads it as compile does.
  CacheTempDir other_dir;
  FileProgramCache other(other_dir.path().string());
  other.put("copied", *got);
  const std::optional<ObjectCode> again = other.get_object_code("copied");
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->lowered_name("fill<float>"), compiled.lowered_name("fill<float>"));
  // Bytes put by hand are not an ObjectCode entry; a missing key is a miss.
  other.put("bytes", std::string_view("not an entry"));
  EXPECT_FALSE(other.get_object_code("bytes").has_value());
  EXPECT_FALSE(other.get_object_code("missing").has_value());
}

TEST(ProgramCacheObjectCode, PutChecksItsArguments) {
  InMemoryProgramCache cache(1024);
  const ObjectCode ptx = ObjectCode::from_ptx(".version 8.0\n", "tiny");
  try {
    cache.put("", ptx);
    ADD_FAILURE() << "an empty key was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the key is empty"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cache.entry_count(), 0U);
  cache.put("k", ptx);
  ASSERT_TRUE(cache.get_object_code("k").has_value());
  EXPECT_EQ(cache.get_object_code("k")->name(), "tiny");
}

TEST(FileProgramCache, WithoutACapKeepsEveryEntry) {
  CacheTempDir dir;
  FileProgramCache cache(dir.path());
  const std::string value(4096, 'x');
  for (int i = 0; i < 64; ++i) {
    cache.put("key " + std::to_string(i), value);
  }
  EXPECT_EQ(entry_files(dir.path()).size(), 64U);
  EXPECT_GE(cache.size_bytes(), 64U * 4096U);
  EXPECT_THROW(FileProgramCache(dir.path(), 0), std::invalid_argument);
}

// ---- InMemoryProgramCache ---------------------------------------------------------

TEST(InMemoryProgramCache, EvictsLeastRecentlyUsedByBytes) {
  InMemoryProgramCache cache(30);
  cache.put("a", std::string(9, 'A'));  // 10 bytes
  cache.put("b", std::string(9, 'B'));
  cache.put("c", std::string(9, 'C'));
  EXPECT_EQ(cache.size_bytes(), 30U);
  ASSERT_TRUE(cache.get("a"));  // a is now the most recently used
  cache.put("d", std::string(9, 'D'));
  EXPECT_FALSE(cache.get("b")) << "b was least recently used";
  EXPECT_TRUE(cache.get("a"));
  EXPECT_TRUE(cache.get("c"));
  EXPECT_EQ(*cache.get("d"), std::string(9, 'D'));
  EXPECT_EQ(cache.entry_count(), 3U);
  cache.put("huge", std::string(100, 'x'));
  EXPECT_FALSE(cache.get("huge")) << "an entry above the cap is not stored";
  cache.put("a", "new");
  EXPECT_EQ(*cache.get("a"), "new");
  cache.clear();
  EXPECT_EQ(cache.size_bytes(), 0U);
  EXPECT_THROW(InMemoryProgramCache(0), std::invalid_argument);
}

TEST(InMemoryProgramCache, CompileHitReturnsTheSameCodeAndNames) {
  CUWRAP_REQUIRE_NVRTC();
  InMemoryProgramCache cache(std::size_t{16} << 20);
  const std::vector<std::string> names{"fill<int>"};
  std::string log1;
  Program p1(kCacheSource, CodeType::Cxx, cache_sm90());
  const ObjectCode first = p1.compile(TargetType::Cubin, names, {.log = &log1, .cache = &cache});
  EXPECT_EQ(cache.entry_count(), 1U);
  Program p2(kCacheSource, CodeType::Cxx, cache_sm90());
  std::string log2 = "untouched";
  const ObjectCode second = p2.compile(TargetType::Cubin, names, {.log = &log2, .cache = &cache});
  EXPECT_EQ(cache.entry_count(), 1U);
  EXPECT_EQ(log2, log1);
  EXPECT_EQ(second.code_type(), TargetType::Cubin);
  ASSERT_EQ(second.code().size(), first.code().size());
  EXPECT_TRUE(std::equal(first.code().begin(), first.code().end(), second.code().begin()));
  EXPECT_EQ(second.lowered_name("fill<int>"), first.lowered_name("fill<int>"));
  EXPECT_EQ(second.name(), first.name());
  // A different target is a different entry.
  const ObjectCode ptx = p2.compile(TargetType::Ptx, names, {.cache = &cache});
  EXPECT_EQ(ptx.code_type(), TargetType::Ptx);
  EXPECT_EQ(cache.entry_count(), 2U);
}

TEST(InMemoryProgramCache, MalformedValueIsAMissAndIsReplaced) {
  CUWRAP_REQUIRE_NVRTC();
  InMemoryProgramCache cache(std::size_t{16} << 20);
  Program p(kCacheSource, CodeType::Cxx, cache_sm90());
  const std::string key = p.program_cache_key(TargetType::Ptx);
  cache.put(key, "garbage");
  const ObjectCode code = p.compile(TargetType::Ptx, {.cache = &cache});
  EXPECT_EQ(code.code_type(), TargetType::Ptx);
  EXPECT_NE(*cache.get(key), "garbage");
}

// ---- FileProgramCache -------------------------------------------------------------

TEST(FileProgramCache, StoresAcrossInstancesAndCompiles) {
  CUWRAP_REQUIRE_NVRTC();
  CacheTempDir dir;
  const std::vector<std::string> names{"fill<float>"};
  ObjectCode first = [&] {
    FileProgramCache cache(dir.path(), std::size_t{64} << 20);
    Program p(kCacheSource, CodeType::Cxx, cache_sm90());
    return p.compile(TargetType::Cubin, names, {.cache = &cache});
  }();
  FileProgramCache cache(dir.path(), std::size_t{64} << 20);
  Program p(kCacheSource, CodeType::Cxx, cache_sm90());
  const std::string key = p.program_cache_key(TargetType::Cubin, names);
  ASSERT_TRUE(fs::exists(cache.entry_path(key)));
  const ObjectCode second = p.compile(TargetType::Cubin, names, {.cache = &cache});
  ASSERT_EQ(second.code().size(), first.code().size());
  EXPECT_TRUE(std::equal(first.code().begin(), first.code().end(), second.code().begin()));
  EXPECT_EQ(second.lowered_name("fill<float>"), first.lowered_name("fill<float>"));
  EXPECT_EQ(entry_files(dir.path()).size(), 1U) << "no temporary file is left behind";
}

TEST(FileProgramCache, DamagedEntriesAreMisses) {
  CacheTempDir dir;
  FileProgramCache cache(dir.path(), 1 << 20);
  cache.put("key", "value");
  const fs::path path = cache.entry_path("key");
  const std::string good = read_bytes(path);
  ASSERT_EQ(*cache.get("key"), "value");

  std::string flipped = good;
  flipped[flipped.size() - 40] ^= 0x01;  // inside the value
  write_bytes(path, flipped);
  EXPECT_FALSE(cache.get("key")) << "checksum mismatch";

  write_bytes(path, good.substr(0, good.size() / 2));
  EXPECT_FALSE(cache.get("key")) << "torn (truncated) entry";

  write_bytes(path, good + "x");
  EXPECT_FALSE(cache.get("key")) << "trailing bytes";

  write_bytes(path, "");
  EXPECT_FALSE(cache.get("key")) << "empty file";

  // Same length, other key bytes: as if two keys shared a file name.
  std::string other_key = good;
  other_key.replace(other_key.find("key"), 3, "kez");
  write_bytes(path, other_key);
  EXPECT_FALSE(cache.get("key")) << "the stored key must equal the key asked for";

  write_bytes(path, good);
  EXPECT_EQ(*cache.get("key"), "value");

  // Random garbage of every small length never crashes.
  std::mt19937 rng(7);
  for (std::size_t n = 0; n < 200; ++n) {
    std::string junk(n, '\0');
    for (char& c : junk) {
      c = static_cast<char>(rng());
    }
    if (n >= 10) {
      junk.replace(0, 10, "CUWRAPPC2\n");
    }
    write_bytes(path, junk);
    EXPECT_FALSE(cache.get("key"));
  }
}

// The file's layout (program_cache.hpp): a valid entry with one field changed and its
// checksum computed anew is still refused when the field is wrong, and an entry of the
// first format (SHA-256 checksum) is a miss.
TEST(FileProgramCache, EntriesWithWrongLengthsOrTheOldFormatAreMisses) {
  CacheTempDir dir;
  FileProgramCache cache(dir.path(), 1 << 20);
  cache.put("key", "value");
  const fs::path path = cache.entry_path("key");
  const std::string good = read_bytes(path);
  ASSERT_EQ(good.size(), 10U + 8 + 3 + 8 + 5 + 8);
  const auto with_checksum = [](std::string body) {
    const std::uint64_t sum = cuwrap::detail::xxh64(body);
    for (int i = 0; i < 8; ++i) {
      body.push_back(static_cast<char>((sum >> (8 * i)) & 0xFFU));
    }
    return body;
  };
  const std::string body = good.substr(0, good.size() - 8);
  ASSERT_EQ(with_checksum(body), good) << "the checksum is XXH64 of the bytes before it";

  std::string long_value = body;
  long_value[10 + 8 + 3] = 6;  // value length 6 where 5 bytes follow
  write_bytes(path, with_checksum(long_value));
  EXPECT_FALSE(cache.get("key"));

  std::string huge_key = body;
  huge_key[10 + 7] = '\x7F';  // a key length near 2^63
  write_bytes(path, with_checksum(huge_key));
  EXPECT_FALSE(cache.get("key"));

  std::string first_format = body;
  first_format[8] = '1';  // "CUWRAPPC1\n"
  write_bytes(path, with_checksum(first_format));
  EXPECT_FALSE(cache.get("key"));

  write_bytes(path, good);
  EXPECT_EQ(*cache.get("key"), "value");
}

// A hit refreshes the modification time (eviction's "last used"), and the hits that
// follow within a second write nothing; without a cap nothing is refreshed.
TEST(FileProgramCache, RepeatedHitsRefreshTheModificationTimeOnce) {
  CacheTempDir dir;
  FileProgramCache cache(dir.path(), 1 << 20);
  cache.put("k", "v");
  const fs::path path = cache.entry_path("k");
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(path, now - std::chrono::seconds(30));
  const auto first_hit = std::chrono::steady_clock::now();
  ASSERT_TRUE(cache.get("k"));
  EXPECT_GT(fs::last_write_time(path), now - std::chrono::seconds(5)) << "refreshed";

  const auto young = fs::file_time_type::clock::now() - std::chrono::milliseconds(100);
  fs::last_write_time(path, young);
  ASSERT_TRUE(cache.get("k"));
  if (std::chrono::steady_clock::now() - first_hit < std::chrono::milliseconds(900)) {
    EXPECT_EQ(fs::last_write_time(path), young) << "refreshed a moment ago: not written again";
  }  // else a second passed between the hits (a machine under load): a refresh is due

  FileProgramCache uncapped(dir.path());
  fs::last_write_time(path, now - std::chrono::seconds(30));
  ASSERT_TRUE(uncapped.get("k"));
  EXPECT_EQ(fs::last_write_time(path), now - std::chrono::seconds(30))
      << "without a cap nothing is evicted, so nothing is refreshed";
}

// A hit reads an entry with one read() into a buffer of 64 KiB that grows for larger
// ones: values past that size, and past the size a thread keeps, read back whole; a FIFO
// or a directory under an entry's name is a miss, not a hang.
TEST(FileProgramCache, LargeEntriesAndEntriesThatAreNoFiles) {
  CacheTempDir dir;
  FileProgramCache cache(dir.path());
  // 37 bytes besides the value (magic, lengths, the key "big", checksum): files of 64 KiB
  // less one byte, exactly 64 KiB (the buffer filled: an fstat, a second read) and 3 MiB.
  for (const std::size_t size :
       {std::size_t{65536} - 37 - 1, std::size_t{65536} - 37, std::size_t{3} << 20}) {
    std::string value(size, 'x');
    value.back() = 'y';
    cache.put("big", value);
    const auto got = cache.get("big");
    ASSERT_TRUE(got) << size;
    EXPECT_EQ(fs::file_size(cache.entry_path("big")), size + 37);
    EXPECT_EQ(*got, value) << size;
  }
  EXPECT_EQ(cache.get("big")->size(), std::size_t{3} << 20) << "after the buffer was let go";

  ASSERT_EQ(::mkfifo(cache.entry_path("fifo").c_str(), 0600), 0);
  EXPECT_FALSE(cache.get("fifo"));
  fs::create_directory(cache.entry_path("dir"));
  EXPECT_FALSE(cache.get("dir"));
}

TEST(FileProgramCache, CorruptEntryMakesCompileRecompile) {
  CUWRAP_REQUIRE_NVRTC();
  CacheTempDir dir;
  FileProgramCache cache(dir.path(), std::size_t{64} << 20);
  Program p(kCacheSource, CodeType::Cxx, cache_sm90());
  const ObjectCode first = p.compile(TargetType::Ptx, {.cache = &cache});
  const fs::path path = cache.entry_path(p.program_cache_key(TargetType::Ptx));
  write_bytes(path, "CUWRAPPC2\nnonsense");
  const ObjectCode second = p.compile(TargetType::Ptx, {.cache = &cache});
  EXPECT_EQ(std::string(second.code().begin(), second.code().end()),
            std::string(first.code().begin(), first.code().end()));
  EXPECT_TRUE(cache.get(p.program_cache_key(TargetType::Ptx))) << "rewritten after the miss";
}

TEST(FileProgramCache, EvictsLeastRecentlyUsedPastTheCap) {
  CacheTempDir dir;
  const std::string value(1000, 'v');
  FileProgramCache probe(dir.path(), 1 << 20);
  probe.put("probe", value);
  const std::size_t entry = probe.size_bytes();
  probe.clear();
  ASSERT_GT(entry, value.size());

  FileProgramCache cache(dir.path(), 3 * entry + entry / 2);
  cache.put("k1", value);
  cache.put("k2", value);
  cache.put("k3", value);
  // Make the ages unambiguous whatever the file system's time resolution.
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(cache.entry_path("k1"), now - std::chrono::seconds(30));
  fs::last_write_time(cache.entry_path("k2"), now - std::chrono::seconds(20));
  fs::last_write_time(cache.entry_path("k3"), now - std::chrono::seconds(10));
  ASSERT_TRUE(cache.get("k1"));  // refreshes k1: k2 is now the oldest
  cache.put("k4", value);
  EXPECT_FALSE(fs::exists(cache.entry_path("k2")));
  EXPECT_TRUE(cache.get("k1"));
  EXPECT_TRUE(cache.get("k3"));
  EXPECT_TRUE(cache.get("k4"));
  EXPECT_LE(cache.size_bytes(), cache.max_bytes());
}

TEST(FileProgramCache, RemovesTemporaryFilesOfDeadWritersOnly) {
  CacheTempDir dir;
  FileProgramCache cache(dir.path(), 1 << 20);
  const fs::path stale = dir.path() / ".tmp-123-0-1";
  const fs::path fresh = dir.path() / ".tmp-456-0-2";
  write_bytes(stale, "half an entry");
  write_bytes(fresh, "being written");
  fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::hours(1));
  cache.put("k", "v");
  EXPECT_FALSE(fs::exists(stale)) << "left by a writer that died";
  EXPECT_TRUE(fs::exists(fresh)) << "a live writer's file must stay";
  EXPECT_EQ(cache.size_bytes(), fs::file_size(cache.entry_path("k")))
      << "temporary files are not entries";
}

TEST(FileProgramCache, ConcurrentProcessesNeverReadATornEntry) {
  CacheTempDir dir;
  // Two values of different lengths under one key: a reader that saw a mix of the two
  // would fail the checksum, so every hit must be exactly one of them.
  const std::string a(200000, 'a');
  const std::string b(150000, 'b');
  std::vector<pid_t> children;
  for (int child = 0; child < 3; ++child) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        FileProgramCache cache(dir.path(), std::size_t{64} << 20);
        for (int i = 0; i < 150; ++i) {
          cache.put("shared", (i + child) % 2 == 0 ? a : b);
          const auto got = cache.get("shared");
          if (got && *got != a && *got != b) {
            status = 1;
          }
        }
      } catch (...) {
        status = 2;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  FileProgramCache cache(dir.path(), std::size_t{64} << 20);
  int hits = 0;
  for (int i = 0; i < 300; ++i) {
    if (const auto got = cache.get("shared")) {
      ++hits;
      ASSERT_TRUE(*got == a || *got == b) << "torn read of size " << got->size();
    }
  }
  for (pid_t pid : children) {
    int status = -1;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  const auto final_value = cache.get("shared");
  ASSERT_TRUE(final_value);
  EXPECT_TRUE(*final_value == a || *final_value == b);
  EXPECT_EQ(entry_files(dir.path()).size(), 1U) << "no temporary file is left behind";
  static_cast<void>(hits);
}

TEST(FileProgramCache, CreatesTheDirectoryPrivate) {
  CacheTempDir parent;
  const fs::path dir = parent.path() / "new" / "cache";
  FileProgramCache cache(dir, 1 << 20);
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777U, 0700U);
  cache.put("k", "v");
  ASSERT_EQ(::stat(cache.entry_path("k").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077U, 0U) << "entries are private too";
}

TEST(FileProgramCache, RefusesDirectoriesOthersCanWrite) {
  CacheTempDir dir;
  for (auto extra : {fs::perms::group_write, fs::perms::others_write}) {
    fs::permissions(dir.path(), fs::perms::owner_all | extra, fs::perm_options::replace);
    try {
      FileProgramCache cache(dir.path(), 1 << 20);
      ADD_FAILURE() << "a directory writable by others must be refused";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("writable by group or others"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find(dir.path().string()), std::string::npos);
    }
  }
  CacheTempDir file_parent;
  const fs::path file = file_parent.path() / "plain";
  write_bytes(file, "x");
  EXPECT_THROW(FileProgramCache(file, 1 << 20), std::invalid_argument);
}

TEST(FileProgramCache, RefusesADirectoryOwnedByAnotherUser) {
  CacheTempDir dir;
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(dir.path().c_str(), 65534, 65534), 0);
  } else {
    // Non-root: a directory owned by root stands for "another user".
    struct stat st {};
    ASSERT_EQ(::stat("/", &st), 0);
    if (st.st_uid == ::geteuid()) {
      GTEST_SKIP() << "no directory owned by another user is available";
    }
  }
  const fs::path refused = ::geteuid() == 0 ? dir.path() : fs::path("/");
  try {
    FileProgramCache cache(refused, 1 << 20);
    ADD_FAILURE() << "a directory owned by another user must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("owned by user"), std::string::npos) << e.what();
  }
}

TEST(FileProgramCache, UnwritableDirectoryCompilesUncachedWithOneWarning) {
  CUWRAP_REQUIRE_NVRTC();
  CacheTempDir dir;
  std::vector<std::string> warnings;
  FileProgramCache cache(dir.path(), std::size_t{64} << 20,
                         {[](const std::string& message, void* user_data) {
                            static_cast<std::vector<std::string>*>(user_data)->push_back(message);
                          },
                          &warnings});
  // Stand-in for a read-only or full directory, which root would bypass: the
  // directory's place is taken by a file after the cache was opened.
  fs::remove(dir.path());
  write_bytes(dir.path(), "not a directory any more");
  Program p(kCacheSource, CodeType::Cxx, cache_sm90());
  const ObjectCode first = p.compile(TargetType::Ptx, {.cache = &cache});
  const ObjectCode second = p.compile(TargetType::Cubin, {.cache = &cache});
  EXPECT_EQ(first.code_type(), TargetType::Ptx);
  EXPECT_EQ(second.code_type(), TargetType::Cubin);
  ASSERT_EQ(warnings.size(), 1U) << "one warning, not one per compile";
  EXPECT_NE(warnings[0].find(dir.path().string()), std::string::npos) << warnings[0];
  fs::remove(dir.path());
  fs::create_directory(dir.path());
}

// A directory the cache cannot make, or an entry it cannot remove, is a std::system_error
// with the errno of the failed call and the path, as every file error of cuwrap.
TEST(FileProgramCache, FileErrorsCarryTheErrnoAndThePath) {
  CacheTempDir dir;
  const fs::path file = dir.path() / "plain_file";
  write_bytes(file, "x");
  try {
    FileProgramCache cache(file / "cache");  // a directory under a regular file
    FAIL() << "made a cache directory under a regular file";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::not_a_directory) << e.what();
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
  if (::geteuid() == 0) {
    GTEST_SKIP() << "root makes and removes files in read-only directories";
  }
  const fs::path locked = dir.path() / "locked";
  fs::create_directory(locked);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec, fs::perm_options::replace);
  try {
    FileProgramCache cache(locked / "cache");
    ADD_FAILURE() << "made a cache directory in a read-only directory";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::permission_denied) << e.what();
    EXPECT_NE(std::string(e.what()).find((locked / "cache").string()), std::string::npos)
        << e.what();
  }
  fs::permissions(locked, fs::perms::owner_all, fs::perm_options::replace);
  FileProgramCache cache(locked / "cache");
  cache.put("k", std::string_view("v"));
  fs::permissions(locked / "cache", fs::perms::owner_read | fs::perms::owner_exec,
                  fs::perm_options::replace);
  try {
    static_cast<void>(cache.remove("k"));
    ADD_FAILURE() << "removed an entry from a read-only directory";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::permission_denied) << e.what();
    EXPECT_NE(std::string(e.what()).find(cache.entry_path("k").string()), std::string::npos)
        << e.what();
  }
  fs::permissions(locked / "cache", fs::perms::owner_all, fs::perm_options::replace);
}

TEST(FileProgramCache, ReadOnlyDirectoryIsUsableForReading) {
  if (::geteuid() == 0) {
    GTEST_SKIP() << "root writes to read-only directories; covered by the test above";
  }
  CacheTempDir dir;
  {
    FileProgramCache cache(dir.path(), 1 << 20);
    cache.put("k", "v");
  }
  fs::permissions(dir.path(), fs::perms::owner_read | fs::perms::owner_exec,
                  fs::perm_options::replace);
  int warned = 0;
  FileProgramCache cache(
      dir.path(), 1 << 20,
      {[](const std::string&, void* count) { ++*static_cast<int*>(count); }, &warned});
  EXPECT_EQ(*cache.get("k"), "v");
  cache.put("k2", "v2");
  cache.put("k3", "v3");
  EXPECT_FALSE(cache.get("k2"));
  EXPECT_EQ(warned, 1);
}

TEST(ProgramCacheDigest, MatchesKnownSha256) {
  // FIPS 180-4 examples: one block, empty input, and a message spanning two blocks.
  EXPECT_EQ(cuwrap::detail::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(cuwrap::detail::sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(cuwrap::detail::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(ProgramCacheDigest, ChecksumIsXxh64) {
  // xxHash's reference values (seed 0): empty, under 4, under 32 and past 32 bytes.
  EXPECT_EQ(cuwrap::detail::xxh64(""), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(cuwrap::detail::xxh64("a"), 0xD24EC4F1A98C6E5BULL);
  EXPECT_EQ(cuwrap::detail::xxh64("abc"), 0x44BC2CF5AD770999ULL);
  EXPECT_EQ(cuwrap::detail::xxh64("The quick brown fox jumps over the lazy dog"),
            0x0B242D361FDA71BCULL);
}

TEST(ProgramCacheDigest, EntryFileIsNamedBySha256OfTheKey) {
  CacheTempDir dir;
  FileProgramCache cache(dir.path(), 1 << 20);
  EXPECT_EQ(cache.entry_path("abc").filename().string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ProgramCacheDigest, MissingLibcryptoIsALoadErrorNamingIt) {
  try {
    cuwrap::detail::check_libcrypto({"/nonexistent/libcrypto.so.3", "libcuwrap-no-such-crypto.so"});
    FAIL() << "no LoadError for a missing libcrypto";
  } catch (const cuwrap::LoadError& e) {
    EXPECT_EQ(e.library(), "libcrypto");
    EXPECT_EQ(e.symbol(), "");
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot load libcrypto"), std::string::npos) << what;
    EXPECT_NE(what.find("/nonexistent/libcrypto.so.3"), std::string::npos) << what;
    EXPECT_NE(what.find("libcuwrap-no-such-crypto.so"), std::string::npos) << what;
  }
  // A library that loads but is not libcrypto: the error names the missing entry point.
  try {
    cuwrap::detail::check_libcrypto({"libc.so.6"});
    FAIL() << "no LoadError for a library without EVP functions";
  } catch (const cuwrap::LoadError& e) {
    EXPECT_EQ(e.library(), "libcrypto");
    EXPECT_EQ(e.symbol(), "EVP_MD_CTX_new");
    EXPECT_NE(std::string(e.what()).find("libc.so.6 has no EVP_MD_CTX_new"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(cuwrap::detail::check_libcrypto(
      {"/nonexistent/libcrypto.so", "libcrypto.so.3", "libcrypto.so.1.1"}))
      << "the first candidate that loads is used";
}

}  // namespace
