// ProgramCache: compiled programs kept in memory or on disk, so that a process that
// compiles the same source again (or a new process, with FileProgramCache) skips NVRTC.
//
// Program::compile(target, names, log, cache) builds the key from everything that can
// change the output (make_program_cache_key in program.hpp, cuda.core's function of the
// same name): the source, the code type, every option, the target, the architecture,
// the name expressions, and the NVRTC, nvJitLink (for PTX) and driver versions. A cache
// stores bytes under that key. An ObjectCode is stored in one entry format, whether
// Program::compile or a user's put(key, object_code) writes it: "cuwrap cached program
// 1", then the kind, name, compile log, name-expression → lowered-name pairs and the
// code, so that either flow reads what the other wrote. Anything else under a key
// (bytes put by hand, a damaged value) is a miss for them.
//
// FileProgramCache keeps one file per entry, named by the SHA-256 of the key:
//   "CUWRAPPC2\n", u64 key length, key, u64 value length, value, u64 checksum
// (little-endian; the checksum is XXH64 of every byte before it). A reader accepts an
// entry only when the magic, the lengths, the checksum and the full key all match;
// anything else (a torn, truncated, corrupt or colliding file, or one of the first
// format, whose checksum was a SHA-256) is a miss. The checksum finds damage; the
// private directory keeps others from writing entries.
// Writes go to a private temporary file that is renamed into place, so a reader in
// another process sees the old entry, the new one, or none, never half of one.
//
// The caches keep their state (lists, maps, mutexes, paths) behind a pointer, so that
// this header, which every user of program.hpp includes, stays cheap to parse.
#pragma once

#include <cuwrap/detail/handler.hpp>
#include <cuwrap/detail/path.hpp>
#include <cuwrap/object_code.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace cuwrap {

/// Storage for compiled programs, keyed by the text Program builds from its inputs.
///
/// Implementations are thread-safe. get() and put() never throw for a storage problem:
/// a cache that cannot read is a miss and one that cannot write drops the entry, so a
/// compile always proceeds.
class ProgramCache {
 public:
  virtual ~ProgramCache() = default;
  /// Return the value stored under `key`, or nothing (a miss).
  virtual std::optional<std::string> get(std::string_view key) = 0;
  /// Store `value` under `key`, evicting least recently used entries past the size cap.
  virtual void put(std::string_view key, std::string_view value) = 0;
  /// Remove every entry.
  virtual void clear() = 0;
  /// Return the bytes the entries take (keys and values; for files, their sizes).
  virtual std::size_t size_bytes() const = 0;

  /// Store `code` under `key` in the entry format Program::compile writes, so that a
  /// compile with the same key (make_program_cache_key) is a hit (cuda.core's
  /// `cache[key] = object_code`). The lowered names of its name expressions are kept.
  ///
  /// A subclass that overrides put(key, value) brings this one back into scope with
  /// `using ProgramCache::put;`. Throws std::invalid_argument for an empty key, before
  /// the store.
  void put(std::string_view key, const ObjectCode& code);
  /// Return the ObjectCode stored under `key` by put(key, code) or Program::compile
  /// (its kind, name, lowered names), or nothing: a miss, or bytes that are not such
  /// an entry (cuda.core's `cache.get(key)`, which returns the code).
  std::optional<ObjectCode> get_object_code(std::string_view key);

 protected:
  ProgramCache() = default;
  ProgramCache(const ProgramCache&) = default;
  ProgramCache& operator=(const ProgramCache&) = default;
};

/// A ProgramCache in process memory, least recently used entries evicted past
/// `max_bytes` (counting keys and values).
///
/// Example:
/// \code
///   cuwrap::InMemoryProgramCache cache(64 << 20);
///   cuwrap::ObjectCode obj = program.compile(cuwrap::TargetType::Cubin, {.cache = &cache});
/// \endcode
class InMemoryProgramCache final : public ProgramCache {
 public:
  /// The max_bytes() of a cache without a size cap.
  static constexpr std::size_t kNoSizeCap = ~std::size_t{0};

  /// Create an empty cache without a size cap (cuda.core's `InMemoryProgramCache()`).
  InMemoryProgramCache();
  /// Create an empty cache holding at most `max_bytes` (kNoSizeCap: no cap).
  ///
  /// Throws std::invalid_argument when `max_bytes` is 0.
  explicit InMemoryProgramCache(std::size_t max_bytes);
  InMemoryProgramCache(const InMemoryProgramCache&) = delete;
  InMemoryProgramCache& operator=(const InMemoryProgramCache&) = delete;
  /// Free the entries.
  ~InMemoryProgramCache() override;

  /// Return the value under `key` and mark it most recently used.
  std::optional<std::string> get(std::string_view key) override;
  /// Store `value`; an entry larger than max_bytes() is not stored.
  void put(std::string_view key, std::string_view value) override;
  using ProgramCache::put;
  /// Remove the entry under `key`; return false when there was none (cuda.core's
  /// `del cache[key]`, whose KeyError is the false here).
  bool remove(std::string_view key);
  /// Remove every entry.
  void clear() override;
  /// Return the bytes held (keys and values).
  std::size_t size_bytes() const override;
  /// Return the number of entries.
  std::size_t entry_count() const;
  /// Return the size cap given at construction.
  std::size_t max_bytes() const noexcept { return max_bytes_; }

 private:
  struct State;  // entries, index, mutex: runtime/src/compile/program_cache.cpp
  void evict_locked();

  std::size_t max_bytes_;
  State* state_ = nullptr;  // owned
};

/// A ProgramCache in a directory, shared safely by threads and processes.
///
/// The directory is created private (0700) when missing. Because the cache holds code
/// that the GPU will run, a directory owned by another user or writable by group or
/// others is refused. Without a size cap (cuda.core's FileStreamProgramCache default)
/// entries stay until clear(); with `max_bytes`, the least recently used are evicted
/// first (by modification time, which a hit refreshes, at most once a second per entry
/// and cache, so that repeated hits write nothing) once the files exceed it; the temporary
/// files of writers still at work count towards the cap too (a soft cap). A directory
/// that turns out read-only or full makes put() drop the entry and report one warning
/// through the warning handler (default: one line on stderr). Temporary files left by a
/// writer that died (older than ten minutes) are removed when a cache opens the
/// directory, by clear() and by eviction.
///
/// Example:
/// \code
///   cuwrap::FileProgramCache cache(std::filesystem::path(getenv("HOME")) / ".cache/cuwrap",
///                                  std::size_t{1} << 30);
///   cuwrap::ObjectCode obj = program.compile(cuwrap::TargetType::Cubin, {.cache = &cache});
/// \endcode
class FileProgramCache final : public ProgramCache {
 public:
  /// Receives a warning about a cache that cannot store entries; must not throw.
  ///
  /// A function (or a lambda without captures) taking `const std::string&`, or a
  /// `{callback, user_data}` pair whose callback also takes the `void*` user data.
  using WarningHandler = detail::Handler<const std::string&>;
  /// The max_bytes() of a cache without a size cap (and a `max_bytes` that asks for none).
  static constexpr std::size_t kNoSizeCap = ~std::size_t{0};

  /// Open (creating it 0700 when missing) the cache directory `dir`, without a size cap.
  ///
  /// Throws as the constructor with a cap does.
  explicit FileProgramCache(std::filesystem::path dir);
  /// Open the directory named `dir` (a string), without a size cap.
  template <detail::PathString Path>
  explicit FileProgramCache(const Path& dir)
      : FileProgramCache(NamedPath{}, std::string_view(dir), kNoSizeCap, {}) {}
  /// Open (creating it 0700 when missing) the cache directory `dir`, capped at `max_bytes`
  /// (kNoSizeCap: no cap).
  ///
  /// Throws std::invalid_argument when `max_bytes` is 0, or when `dir` is not a
  /// directory, is owned by another user, or is writable by group or others (the
  /// message names the directory and what to do); std::system_error when it cannot be
  /// created; LoadError naming libcrypto when OpenSSL's libcrypto (1.1 or 3), which
  /// supplies the SHA-256 of the entries, cannot be loaded.
  FileProgramCache(std::filesystem::path dir, std::size_t max_bytes);
  /// Open `dir` as above, reporting warnings to `on_warning` instead of stderr.
  FileProgramCache(std::filesystem::path dir, std::size_t max_bytes, WarningHandler on_warning);
  /// Open the directory named `dir` (a string: no `<filesystem>` needed); as above.
  template <detail::PathString Path>
  FileProgramCache(const Path& dir, std::size_t max_bytes, WarningHandler on_warning = {})
      : FileProgramCache(NamedPath{}, std::string_view(dir), max_bytes, on_warning) {}
  FileProgramCache(const FileProgramCache&) = delete;
  FileProgramCache& operator=(const FileProgramCache&) = delete;
  /// Close the cache (the entry files stay).
  ~FileProgramCache() override;

  /// Return the verified value under `key`; a missing or damaged entry is a miss.
  std::optional<std::string> get(std::string_view key) override;
  /// Write `value` atomically, then evict past the cap; never throws for I/O failures.
  void put(std::string_view key, std::string_view value) override;
  using ProgramCache::put;
  /// Remove the entry file of `key`; return false when there was none (cuda.core's
  /// `del cache[key]`, whose KeyError is the false here).
  ///
  /// Throws std::system_error naming the file when it exists but cannot be removed (a
  /// directory without write permission): unlike a dropped put(), a remove() that did
  /// not happen would leave the entry to be served.
  bool remove(std::string_view key);
  /// Remove every entry file, and the temporary files of writers that died (those of
  /// live writers stay, so that their rename still succeeds).
  void clear() override;
  /// Return the total size of the entry files.
  std::size_t size_bytes() const override;
  /// Return the number of entry files.
  std::size_t entry_count() const;
  /// Return the directory.
  std::filesystem::path directory() const;
  /// Return the size cap given at construction (kNoSizeCap without one).
  std::size_t max_bytes() const noexcept { return max_bytes_; }
  /// Return the path of the entry file for `key` (whether or not it exists).
  std::filesystem::path entry_path(std::string_view key) const;

 private:
  struct NamedPath {};
  struct State;  // directory, warning handler, warned-once flag: program_cache.cpp
  FileProgramCache(NamedPath /*tag*/, std::string_view dir, std::size_t max_bytes,
                   WarningHandler on_warning);
  FileProgramCache(State* state, std::size_t max_bytes) noexcept;
  void warn_once(const std::string& message) noexcept;
  void evict();

  std::size_t max_bytes_;
  State* state_;  // owned
};

namespace detail {

/// Return the SHA-256 digest of `data` as 64 lower-case hex digits.
std::string sha256_hex(std::string_view data);

/// Return the XXH64 hash (seed 0) of `data`: the checksum of FileProgramCache's entries.
std::uint64_t xxh64(std::string_view data);

/// Open the first of `candidates` (file names or paths) that loads and resolve the SHA-256
/// entry points FileProgramCache takes from it, without keeping it; throw LoadError
/// naming libcrypto (and the missing entry point, if that is what failed) otherwise.
void check_libcrypto(std::initializer_list<const char*> candidates);

}  // namespace detail
}  // namespace cuwrap
