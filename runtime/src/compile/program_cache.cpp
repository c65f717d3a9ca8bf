// ProgramCache implementations: an LRU map in memory and checked, atomically written
// entry files in a private directory. SHA-256 (the entry files' names) comes from
// OpenSSL's libcrypto, opened at run time (as the CUDA libraries are), so that building
// cuwrap needs no OpenSSL; the entries' checksum is XXH64, written here.
//
// An on-disk hit is on the path every cached compile takes, so it costs one SHA-256 of
// the key (with a digest context kept per thread), open + read + close of the entry into
// a buffer kept per thread, one XXH64 pass over it and, with a size cap, a
// modification-time refresh at most once a second per entry: no directory listing, no
// fstat for an entry under 64 KiB, no second digest of the key.
#include <cuwrap/error.hpp>
#include <cuwrap/program_cache.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <iostream>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cuwrap {
namespace {

using Digest = std::array<unsigned char, 32>;

// Version 2: the checksum is XXH64 of every byte before it (version 1's SHA-256 of the
// key and value cost more than the rest of a hit). A version 1 file is a miss, replaced
// by the compile that follows.
constexpr std::string_view kMagic = "CUWRAPPC2\n";
constexpr std::size_t kChecksumSize = 8;
constexpr std::string_view kTempPrefix = ".tmp-";
// Temporary files older than this are left over by a writer that died; opening a cache,
// clear() and eviction remove them (a live writer renames its file within milliseconds).
constexpr auto kStaleTempAge = std::chrono::minutes(10);
// A hit refreshes an entry's modification time (eviction's "last used") unless this cache
// did within this time: repeated hits of one entry cost no write to the file system.
constexpr std::int64_t kRefreshAgeNs = 1'000'000'000;

// ---- SHA-256 from libcrypto ------------------------------------------------------
// The six EVP functions of OpenSSL 1.1 and 3 that a digest needs, declared here with
// opaque types of our own (EVP_MD_CTX, EVP_MD and ENGINE are opaque in OpenSSL too), so
// that no OpenSSL header is needed to build.
struct EvpMdCtx;
struct EvpMd;
struct Engine;

struct Libcrypto {
  EvpMdCtx* (*md_ctx_new)() = nullptr;
  void (*md_ctx_free)(EvpMdCtx*) = nullptr;
  const EvpMd* (*sha256)() = nullptr;
  int (*digest_init_ex)(EvpMdCtx*, const EvpMd*, Engine*) = nullptr;
  int (*digest_update)(EvpMdCtx*, const void*, std::size_t) = nullptr;
  int (*digest_final_ex)(EvpMdCtx*, unsigned char*, unsigned*) = nullptr;
  // The digest every call uses: OpenSSL 3's EVP_MD_fetch'ed SHA-256 where there is one
  // (EVP_sha256()'s would be looked up again by every EVP_DigestInit_ex), else EVP_sha256().
  const EvpMd* md = nullptr;
};

// OpenSSL 3, then 1.1 (which already has EVP_MD_CTX_new), then the development link.
constexpr std::array<const char*, 3> kLibcryptoCandidates = {"libcrypto.so.3", "libcrypto.so.1.1",
                                                             "libcrypto.so"};

template <class Fn>
void resolve_crypto(void* handle, const std::string& path, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(handle, name));
  if (fn == nullptr) {
    throw LoadError("libcrypto", name,
                    "cuwrap: " + path + " has no " + name +
                        "; FileProgramCache needs the "
                        "SHA-256 of OpenSSL 1.1 or 3 (libcrypto.so.3: apt install libssl3).");
  }
}

// Open the first of `candidates` that loads (never closed: the pointers live as long as
// the process); LoadError naming libcrypto and every file tried when none does.
Libcrypto open_libcrypto(std::span<const char* const> candidates) {
  void* handle = nullptr;
  std::string path;
  std::string reasons;
  for (const char* candidate : candidates) {
    handle = ::dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      path = candidate;
      break;
    }
    const char* why = ::dlerror();
    reasons += std::string("\n  ") + candidate + ": " + (why != nullptr ? why : "not found");
  }
  if (handle == nullptr) {
    throw LoadError("libcrypto", "",
                    "cuwrap: cannot load libcrypto, which FileProgramCache needs for SHA-256 "
                    "(tried:" +
                        reasons +
                        ")\nInstall OpenSSL's libcrypto (apt install libssl3, "
                        "dnf install openssl-libs).");
  }
  Libcrypto lib;
  resolve_crypto(handle, path, "EVP_MD_CTX_new", lib.md_ctx_new);
  resolve_crypto(handle, path, "EVP_MD_CTX_free", lib.md_ctx_free);
  resolve_crypto(handle, path, "EVP_sha256", lib.sha256);
  resolve_crypto(handle, path, "EVP_DigestInit_ex", lib.digest_init_ex);
  resolve_crypto(handle, path, "EVP_DigestUpdate", lib.digest_update);
  resolve_crypto(handle, path, "EVP_DigestFinal_ex", lib.digest_final_ex);
  using Fetch = const EvpMd* (*)(void* /*library context*/, const char*, const char*);
  if (const auto fetch = reinterpret_cast<Fetch>(::dlsym(handle, "EVP_MD_fetch"))) {
    lib.md = fetch(nullptr, "SHA256", nullptr);  // kept for the process, as the library
  }
  if (lib.md == nullptr) {
    lib.md = lib.sha256();
  }
  return lib;
}

// libcrypto, opened once per process; a failure is kept and thrown again on every use.
const Libcrypto& libcrypto() {
  struct Opened {
    Libcrypto lib;
    std::optional<LoadError> error;
  };
  static const Opened opened = [] {
    try {
      return Opened{open_libcrypto(kLibcryptoCandidates), std::nullopt};
    } catch (const LoadError& e) {
      return Opened{{}, e};
    }
  }();
  if (opened.error) {
    throw *opened.error;
  }
  return opened.lib;
}

// SHA-256 of `data`, in a digest context each thread keeps (one allocation per thread,
// not per digest).
Digest sha256(std::string_view data) {
  const Libcrypto& lib = libcrypto();
  struct FreeContext {
    void (*free)(EvpMdCtx*);
    void operator()(EvpMdCtx* ctx) const { free(ctx); }
  };
  thread_local const std::unique_ptr<EvpMdCtx, FreeContext> ctx(lib.md_ctx_new(),
                                                                FreeContext{lib.md_ctx_free});
  Digest digest{};
  unsigned length = 0;
  const bool ok = ctx && lib.digest_init_ex(ctx.get(), lib.md, nullptr) == 1 &&
                  lib.digest_update(ctx.get(), data.data(), data.size()) == 1 &&
                  lib.digest_final_ex(ctx.get(), digest.data(), &length) == 1;
  if (!ok || length != digest.size()) {
    throw std::runtime_error("ProgramCache: libcrypto's SHA-256 failed");
  }
  return digest;
}

// ---- XXH64 -----------------------------------------------------------------------
// The entries' checksum: xxHash's 64-bit hash (its specification, seed 0), many times
// faster than SHA-256. It guards against torn, truncated and damaged files; it is no
// defence against someone who can write the directory, and SHA-256 was none either
// (whoever can write an entry can write its digest too): the private directory is.
constexpr std::uint64_t kXxPrime1 = 0x9E3779B185EBCA87ULL;
constexpr std::uint64_t kXxPrime2 = 0xC2B2AE3D27D4EB4FULL;
constexpr std::uint64_t kXxPrime3 = 0x165667B19E3779F9ULL;
constexpr std::uint64_t kXxPrime4 = 0x85EBCA77C2B2AE63ULL;
constexpr std::uint64_t kXxPrime5 = 0x27D4EB2F165667C5ULL;

template <class T>
T load_le(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  if constexpr (std::endian::native == std::endian::big) {
    T swapped = 0;
    for (std::size_t i = 0; i < sizeof value; ++i) {
      swapped = static_cast<T>((swapped << 8U) | ((value >> (8 * i)) & 0xFFU));
    }
    value = swapped;
  }
  return value;
}

constexpr std::uint64_t xx_round(std::uint64_t acc, std::uint64_t input) {
  return std::rotl(acc + input * kXxPrime2, 31) * kXxPrime1;
}

constexpr std::uint64_t xx_merge(std::uint64_t acc, std::uint64_t lane) {
  return (acc ^ xx_round(0, lane)) * kXxPrime1 + kXxPrime4;
}

std::uint64_t xxh64(std::string_view data) {
  const char* p = data.data();
  const char* const end = p + data.size();
  std::uint64_t h = 0;
  if (data.size() >= 32) {
    std::uint64_t v1 = kXxPrime1 + kXxPrime2;
    std::uint64_t v2 = kXxPrime2;
    std::uint64_t v3 = 0;
    std::uint64_t v4 = 0 - kXxPrime1;
    for (; end - p >= 32; p += 32) {
      v1 = xx_round(v1, load_le<std::uint64_t>(p));
      v2 = xx_round(v2, load_le<std::uint64_t>(p + 8));
      v3 = xx_round(v3, load_le<std::uint64_t>(p + 16));
      v4 = xx_round(v4, load_le<std::uint64_t>(p + 24));
    }
    h = std::rotl(v1, 1) + std::rotl(v2, 7) + std::rotl(v3, 12) + std::rotl(v4, 18);
    h = xx_merge(xx_merge(xx_merge(xx_merge(h, v1), v2), v3), v4);
  } else {
    h = kXxPrime5;
  }
  h += data.size();
  for (; end - p >= 8; p += 8) {
    h = std::rotl(h ^ xx_round(0, load_le<std::uint64_t>(p)), 27) * kXxPrime1 + kXxPrime4;
  }
  if (end - p >= 4) {
    h = std::rotl(h ^ (load_le<std::uint32_t>(p) * kXxPrime1), 23) * kXxPrime2 + kXxPrime3;
    p += 4;
  }
  for (; p < end; ++p) {
    h = std::rotl(h ^ (static_cast<unsigned char>(*p) * kXxPrime5), 11) * kXxPrime1;
  }
  h ^= h >> 33U;
  h *= kXxPrime2;
  h ^= h >> 29U;
  h *= kXxPrime3;
  h ^= h >> 32U;
  return h;
}

std::string to_hex(const Digest& digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(digest.size() * 2);
  for (unsigned char byte : digest) {
    hex.push_back(kDigits[byte >> 4U]);
    hex.push_back(kDigits[byte & 0xFU]);
  }
  return hex;
}

void append_u64(std::string& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xFFU));
  }
}

std::optional<std::uint64_t> read_u64(std::string_view data, std::size_t& offset) {
  if (data.size() - offset < 8) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    value |= static_cast<std::uint64_t>(static_cast<unsigned char>(data[offset + i])) << (8 * i);
  }
  offset += 8;
  return value;
}

// The bytes of an entry file (see program_cache.hpp for the layout).
std::string encode_entry(std::string_view key, std::string_view value) {
  std::string out;
  out.reserve(kMagic.size() + 16 + key.size() + value.size() + kChecksumSize);
  out.append(kMagic);
  append_u64(out, key.size());
  out.append(key);
  append_u64(out, value.size());
  out.append(value);
  append_u64(out, xxh64(out));
  return out;
}

// Where the value lies in `data` when `data` is a whole, undamaged entry stored under
// `key` (offset and size), or nothing. Every length is checked against the bytes there
// before it is used: the file is input from outside.
std::optional<std::pair<std::size_t, std::size_t>> find_entry_value(std::string_view data,
                                                                    std::string_view key) {
  if (!data.starts_with(kMagic)) {
    return std::nullopt;
  }
  std::size_t offset = kMagic.size();
  const auto key_size = read_u64(data, offset);
  if (!key_size || *key_size != key.size() || data.size() - offset < *key_size ||
      data.compare(offset, key.size(), key) != 0) {
    return std::nullopt;
  }
  offset += *key_size;
  const auto value_size = read_u64(data, offset);
  if (!value_size || data.size() - offset < kChecksumSize ||
      data.size() - offset - kChecksumSize != *value_size) {
    return std::nullopt;
  }
  std::size_t checksum_at = offset + *value_size;
  const auto checksum = read_u64(data, checksum_at);
  if (!checksum || *checksum != xxh64(data.substr(0, offset + *value_size))) {
    return std::nullopt;
  }
  return std::pair{offset, static_cast<std::size_t>(*value_size)};
}

// The bytes of the file `name` (no symbolic link followed), read into `buffer` (kept by
// the caller across reads, so that a hit allocates nothing for them), with `fd` left open
// for the caller to close; nothing on any failure. One read() of a buffer larger than
// the file is the common case: a short read of a regular file is its end, and only a
// file that fills the buffer costs an fstat (is it a regular file, how large is it). A
// file that is no entry gives bytes that are no entry, which the checks that follow
// refuse. O_NONBLOCK: a FIFO planted under an entry's name gives no bytes instead of
// blocking.
std::optional<std::string_view> read_entry_file(const char* name, std::string& buffer, int& fd) {
  fd = ::open(name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return std::nullopt;
  }
  std::size_t done = 0;
  for (;;) {
    if (done == buffer.size()) {
      struct stat st {};
      if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        return std::nullopt;
      }
      // One byte past the size: a file that grew meanwhile shows as one that is too long.
      buffer.resize(std::max(buffer.size() * 2, static_cast<std::size_t>(st.st_size) + 1));
    }
    const std::size_t wanted = buffer.size() - done;
    const ssize_t n = ::read(fd, buffer.data() + done, wanted);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return std::nullopt;
    }
    done += static_cast<std::size_t>(n);
    if (static_cast<std::size_t>(n) < wanted) {
      return std::string_view(buffer.data(), done);
    }
  }
}

// The read buffer of this thread's hits: large enough for most entries, kept between
// hits; one that grew past kKeptBufferSize for a large entry is let go afterwards.
constexpr std::size_t kFirstReadSize = std::size_t{64} << 10;
constexpr std::size_t kKeptBufferSize = std::size_t{1} << 20;

std::string& read_buffer() {
  thread_local std::string buffer(kFirstReadSize, '\0');
  return buffer;
}

void trim_read_buffer(std::string& buffer) {
  if (buffer.size() > kKeptBufferSize) {
    std::string(kFirstReadSize, '\0').swap(buffer);
  }
}

// The entries whose modification time this cache refreshed lately, so that repeated hits
// of one entry write to the file system at most once per kRefreshAgeNs: a small table
// indexed by the entry's name. Slots are atomics without a lock: a race between threads
// costs one refresh more or one fewer, which only blurs "least recently used" by a second.
class RefreshRecord {
 public:
  // Return whether the entry named by `name` was not refreshed within kRefreshAgeNs, and
  // record it as refreshed now when so.
  bool needs_refresh(const Digest& name) noexcept {
    std::uint64_t tag = 0;
    std::memcpy(&tag, name.data(), sizeof tag);
    Slot& slot = slots_[tag % slots_.size()];
    const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count();
    if (slot.tag.load(std::memory_order_relaxed) == tag &&
        now - slot.when.load(std::memory_order_relaxed) < kRefreshAgeNs) {
      return false;
    }
    slot.tag.store(tag, std::memory_order_relaxed);
    slot.when.store(now, std::memory_order_relaxed);
    return true;
  }

 private:
  struct Slot {
    std::atomic<std::uint64_t> tag{0};
    std::atomic<std::int64_t> when{0};
  };
  std::array<Slot, 64> slots_{};
};

bool is_entry_name(const std::string& name) {
  return name.size() == 64 && std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string temp_suffix() {
  static std::atomic<unsigned> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1)) + "-" +
         std::to_string(rng());
}

// Refuse a directory another user could plant code in: not ours, or writable by others.
void check_private_directory(const std::filesystem::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    throw std::system_error(errno, std::generic_category(),
                            "FileProgramCache: cannot stat '" + dir.string() + "'");
  }
  if (!S_ISDIR(st.st_mode)) {
    throw std::invalid_argument("FileProgramCache: '" + dir.string() + "' is not a directory");
  }
  if (st.st_uid != ::geteuid()) {
    throw std::invalid_argument(
        "FileProgramCache: refusing '" + dir.string() + "': it is owned by user " +
        std::to_string(st.st_uid) + ", not by this process's user " + std::to_string(::geteuid()) +
        "; a cache holds code the GPU runs, so use a directory of your own");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw std::invalid_argument(
        "FileProgramCache: refusing '" + dir.string() +
        "': it is writable by group or others (mode " + std::to_string((st.st_mode >> 6U) & 7U) +
        std::to_string((st.st_mode >> 3U) & 7U) + std::to_string(st.st_mode & 7U) +
        "); a cache holds code the GPU runs: chmod 700 it or choose a private directory");
  }
}

// Remove `item`, a temporary file, when its writer died before the rename (it is older
// than kStaleTempAge); return its size when it stays (a writer at work), else 0.
std::size_t sweep_temp_file(const std::filesystem::directory_entry& item,
                            std::filesystem::file_time_type stale_before) {
  std::error_code ec;
  const auto time = item.last_write_time(ec);
  if (ec) {
    return 0;  // renamed or removed meanwhile
  }
  if (time < stale_before) {
    std::filesystem::remove(item.path(), ec);
    return 0;
  }
  const std::uintmax_t size = item.file_size(ec);
  return ec ? 0 : static_cast<std::size_t>(size);
}

bool is_temp_name(const std::string& name) { return name.starts_with(kTempPrefix); }

// Call `visit(item)` for each entry file in `dir` (a directory that cannot be listed has
// none).
template <class Visit>
void for_each_entry_file(const std::filesystem::path& dir, Visit visit) {
  std::error_code ec;
  for (const auto& item : std::filesystem::directory_iterator(dir, ec)) {
    std::error_code item_ec;
    if (is_entry_name(item.path().filename().string()) && item.is_regular_file(item_ec)) {
      visit(item);
    }
  }
}

std::filesystem::file_time_type stale_temp_time() {
  return std::filesystem::file_time_type::clock::now() - kStaleTempAge;
}

void default_warning(const std::string& message) {
  std::cerr << "cuwrap: warning: " << message << '\n';
}

}  // namespace

// ---- InMemoryProgramCache --------------------------------------------------------

struct InMemoryProgramCache::State {
  struct Entry {
    std::string key;
    std::string value;
  };
  std::size_t bytes = 0;
  std::list<Entry> entries;  // most recently used first
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index;
  mutable std::mutex mutex;
};

InMemoryProgramCache::InMemoryProgramCache() : InMemoryProgramCache(kNoSizeCap) {}

InMemoryProgramCache::InMemoryProgramCache(std::size_t max_bytes) : max_bytes_(max_bytes) {
  if (max_bytes_ == 0) {
    throw std::invalid_argument("InMemoryProgramCache: max_bytes must be > 0");
  }
  state_ = new State();  // NOLINT(cppcoreguidelines-owning-memory)
}

InMemoryProgramCache::~InMemoryProgramCache() {
  delete state_;  // NOLINT(cppcoreguidelines-owning-memory)
}

std::optional<std::string> InMemoryProgramCache::get(std::string_view key) {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  const auto found = state_->index.find(key);
  if (found == state_->index.end()) {
    return std::nullopt;
  }
  state_->entries.splice(state_->entries.begin(), state_->entries, found->second);
  return found->second->value;
}

void InMemoryProgramCache::put(std::string_view key, std::string_view value) {
  const std::size_t size = key.size() + value.size();
  const std::lock_guard<std::mutex> lock(state_->mutex);
  if (const auto found = state_->index.find(key); found != state_->index.end()) {
    state_->bytes -= found->second->key.size() + found->second->value.size();
    state_->entries.erase(found->second);
    state_->index.erase(found);
  }
  if (size > max_bytes_) {
    return;
  }
  state_->entries.push_front(State::Entry{std::string(key), std::string(value)});
  state_->index.emplace(state_->entries.front().key, state_->entries.begin());
  state_->bytes += size;
  evict_locked();
}

bool InMemoryProgramCache::remove(std::string_view key) {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  const auto found = state_->index.find(key);
  if (found == state_->index.end()) {
    return false;
  }
  const auto entry = found->second;
  state_->bytes -= entry->key.size() + entry->value.size();
  state_->index.erase(found);
  state_->entries.erase(entry);
  return true;
}

void InMemoryProgramCache::evict_locked() {
  while (state_->bytes > max_bytes_ && !state_->entries.empty()) {
    State::Entry& oldest = state_->entries.back();
    state_->bytes -= oldest.key.size() + oldest.value.size();
    state_->index.erase(oldest.key);
    state_->entries.pop_back();
  }
}

void InMemoryProgramCache::clear() {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  state_->index.clear();
  state_->entries.clear();
  state_->bytes = 0;
}

std::size_t InMemoryProgramCache::size_bytes() const {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->bytes;
}

std::size_t InMemoryProgramCache::entry_count() const {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->entries.size();
}

// ---- FileProgramCache ------------------------------------------------------------

struct FileProgramCache::State {
  std::filesystem::path dir;
  WarningHandler on_warning;
  std::once_flag warned;
  std::string dir_prefix;  // dir and a separator: entry file names are appended to it
  RefreshRecord refreshed;
};

FileProgramCache::FileProgramCache(std::filesystem::path dir)
    : FileProgramCache(std::move(dir), kNoSizeCap, {}) {}

FileProgramCache::FileProgramCache(std::filesystem::path dir, std::size_t max_bytes)
    : FileProgramCache(std::move(dir), max_bytes, {}) {}

FileProgramCache::FileProgramCache(NamedPath /*tag*/, std::string_view dir, std::size_t max_bytes,
                                   WarningHandler on_warning)
    : FileProgramCache(std::filesystem::path(dir), max_bytes, on_warning) {}

FileProgramCache::~FileProgramCache() {
  delete state_;  // NOLINT(cppcoreguidelines-owning-memory)
}

FileProgramCache::FileProgramCache(State* state, std::size_t max_bytes) noexcept
    : max_bytes_(max_bytes), state_(state) {}

std::filesystem::path FileProgramCache::directory() const { return state_->dir; }

FileProgramCache::FileProgramCache(std::filesystem::path dir, std::size_t max_bytes,
                                   WarningHandler on_warning)
    // Delegating: once the target constructor has run, a throw below runs the
    // destructor, which frees the state.
    : FileProgramCache(new State{std::move(dir), on_warning, {}, {}, {}},
                       max_bytes) {  // NOLINT(cppcoreguidelines-owning-memory)
  if (max_bytes_ == 0) {
    throw std::invalid_argument(
        "FileProgramCache: max_bytes must be > 0; for no size cap, leave it out or pass "
        "FileProgramCache::kNoSizeCap");
  }
  if (state_->dir.empty()) {
    throw std::invalid_argument("FileProgramCache: the directory path is empty");
  }
  libcrypto();  // every entry is named and checked by its SHA-256: fail here, not in get()
  std::error_code ec;
  if (!std::filesystem::exists(state_->dir, ec)) {
    if (state_->dir.has_parent_path()) {
      std::filesystem::create_directories(state_->dir.parent_path());
    }
    if (::mkdir(state_->dir.c_str(), S_IRWXU) != 0 && errno != EEXIST) {
      throw std::system_error(errno, std::generic_category(),
                              "FileProgramCache: cannot create '" + state_->dir.string() + "'");
    }
  }
  check_private_directory(state_->dir);
  state_->dir_prefix = (state_->dir / "").string();
  // Temporary files of writers that died would otherwise stay forever without a cap.
  std::error_code list_ec;
  const auto stale_before = stale_temp_time();
  for (const auto& item : std::filesystem::directory_iterator(state_->dir, list_ec)) {
    if (is_temp_name(item.path().filename().string())) {
      static_cast<void>(sweep_temp_file(item, stale_before));
    }
  }
}

std::filesystem::path FileProgramCache::entry_path(std::string_view key) const {
  return state_->dir / to_hex(sha256(key));
}

std::optional<std::string> FileProgramCache::get(std::string_view key) {
  const Digest name = sha256(key);
  // The directory's name and the entry's, as one C string: no std::filesystem::path.
  std::string path = state_->dir_prefix;
  path += to_hex(name);
  std::string& buffer = read_buffer();
  int fd = -1;
  std::optional<std::string> value;
  if (const std::optional<std::string_view> data = read_entry_file(path.c_str(), buffer, fd)) {
    if (const auto found = find_entry_value(*data, key)) {
      value.emplace(data->substr(found->first, found->second));
      if (max_bytes_ != kNoSizeCap && state_->refreshed.needs_refresh(name)) {
        // Eviction removes the least recently used first: this hit makes the entry recent.
        static_cast<void>(::futimens(fd, nullptr));
      }
    }
  }
  if (fd >= 0) {
    ::close(fd);
  }
  trim_read_buffer(buffer);
  return value;
}

void FileProgramCache::put(std::string_view key, std::string_view value) {
  const std::string bytes = encode_entry(key, value);
  if (bytes.size() > max_bytes_) {
    return;
  }
  const std::filesystem::path target = entry_path(key);
  const std::filesystem::path temp = state_->dir / (std::string(kTempPrefix) + temp_suffix());
  const int fd =
      ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, S_IRUSR | S_IWUSR);
  if (fd < 0) {
    warn_once("cannot write to the program cache '" + state_->dir.string() + "' (" +
              std::strerror(errno) + "); compiling without caching");
    return;
  }
  std::size_t done = 0;
  int error = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      error = errno;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 && error == 0) {
    error = errno;
  }
  if (error == 0 && ::rename(temp.c_str(), target.c_str()) != 0) {
    error = errno;
  }
  if (error != 0) {
    static_cast<void>(::unlink(temp.c_str()));
    warn_once("cannot write to the program cache '" + state_->dir.string() + "' (" +
              std::strerror(error) + "); compiling without caching");
    return;
  }
  evict();
}

void FileProgramCache::evict() {
  if (max_bytes_ == kNoSizeCap) {
    return;  // no cap: no need to list the directory
  }
  struct File {
    std::filesystem::path path;
    std::size_t size;
    std::filesystem::file_time_type time;
  };
  std::vector<File> files;
  std::size_t total = 0;
  std::error_code ec;
  const auto stale_before = stale_temp_time();
  for (const auto& item : std::filesystem::directory_iterator(state_->dir, ec)) {
    const std::string name = item.path().filename().string();
    std::error_code item_ec;
    if (is_temp_name(name)) {
      // A writer's file at work takes disk space too: the cap counts it (it cannot be
      // evicted, so entries go instead).
      total += sweep_temp_file(item, stale_before);
      continue;
    }
    if (!is_entry_name(name) || !item.is_regular_file(item_ec)) {
      continue;
    }
    const std::uintmax_t size = item.file_size(item_ec);
    const auto time = item.last_write_time(item_ec);
    if (item_ec) {
      continue;  // removed by another process meanwhile
    }
    files.push_back({item.path(), static_cast<std::size_t>(size), time});
    total += static_cast<std::size_t>(size);
  }
  if (total <= max_bytes_) {
    return;
  }
  std::sort(files.begin(), files.end(),
            [](const File& a, const File& b) { return a.time < b.time; });
  for (const File& file : files) {
    if (total <= max_bytes_) {
      break;
    }
    std::filesystem::remove(file.path, ec);
    total -= file.size;
  }
}

bool FileProgramCache::remove(std::string_view key) {
  const std::filesystem::path path = entry_path(key);
  if (::unlink(path.c_str()) == 0) {
    return true;
  }
  if (errno == ENOENT) {
    return false;
  }
  throw std::system_error(errno, std::generic_category(),
                          "FileProgramCache::remove: cannot remove '" + path.string() + "'");
}

void FileProgramCache::clear() {
  std::error_code ec;
  const auto stale_before = stale_temp_time();
  for (const auto& item : std::filesystem::directory_iterator(state_->dir, ec)) {
    const std::string name = item.path().filename().string();
    if (is_entry_name(name)) {
      std::error_code remove_ec;
      std::filesystem::remove(item.path(), remove_ec);
    } else if (is_temp_name(name)) {
      // Only those of writers that died: a live writer's rename must still succeed.
      static_cast<void>(sweep_temp_file(item, stale_before));
    }
  }
}

std::size_t FileProgramCache::entry_count() const {
  std::size_t count = 0;
  for_each_entry_file(state_->dir, [&](const std::filesystem::directory_entry&) { ++count; });
  return count;
}

std::size_t FileProgramCache::size_bytes() const {
  std::size_t total = 0;
  for_each_entry_file(state_->dir, [&](const std::filesystem::directory_entry& item) {
    std::error_code ec;
    const std::uintmax_t size = item.file_size(ec);
    if (!ec) {
      total += static_cast<std::size_t>(size);
    }
  });
  return total;
}

void FileProgramCache::warn_once(const std::string& message) noexcept {
  std::call_once(state_->warned, [&] {
    try {
      if (state_->on_warning) {
        state_->on_warning(message);
      } else {
        default_warning(message);
      }
    } catch (...) {  // NOLINT(bugprone-empty-catch): a warning must never fail a compile
    }
  });
}

// ---- detail ----------------------------------------------------------------------

std::string detail::sha256_hex(std::string_view data) { return to_hex(sha256(data)); }

std::uint64_t detail::xxh64(std::string_view data) { return cuwrap::xxh64(data); }

void detail::check_libcrypto(std::initializer_list<const char*> candidates) {
  static_cast<void>(open_libcrypto(std::span(candidates.begin(), candidates.size())));
}

}  // namespace cuwrap
