// ProgramCache implementations: an LRU map in memory and checked, atomically written
// entry files in a private directory. SHA-256 comes from OpenSSL's libcrypto, opened at
// run time (as the CUDA libraries are), so that building cuwrap needs no OpenSSL.
#include <cuwrap/error.hpp>
#include <cuwrap/program_cache.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <list>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <iostream>
#include <memory>
#include <random>
#include <span>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

namespace cuwrap {
namespace {

using Digest = std::array<unsigned char, 32>;

constexpr std::string_view kMagic = "CUWRAPPC1\n";
constexpr std::string_view kTempPrefix = ".tmp-";
// Temporary files older than this are left over by a writer that died; opening a cache,
// clear() and eviction remove them (a live writer renames its file within milliseconds).
constexpr auto kStaleTempAge = std::chrono::minutes(10);

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
};

// OpenSSL 3, then 1.1 (which already has EVP_MD_CTX_new), then the development link.
constexpr std::array<const char*, 3> kLibcryptoCandidates = {"libcrypto.so.3", "libcrypto.so.1.1",
                                                            "libcrypto.so"};

template <class Fn>
void resolve_crypto(void* handle, const std::string& path, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(handle, name));
  if (fn == nullptr) {
    throw LoadError("libcrypto", name,
                    "cuwrap: " + path + " has no " + name + "; FileProgramCache needs the "
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
                    "(tried:" + reasons + ")\nInstall OpenSSL's libcrypto (apt install libssl3, "
                    "dnf install openssl-libs).");
  }
  Libcrypto lib;
  resolve_crypto(handle, path, "EVP_MD_CTX_new", lib.md_ctx_new);
  resolve_crypto(handle, path, "EVP_MD_CTX_free", lib.md_ctx_free);
  resolve_crypto(handle, path, "EVP_sha256", lib.sha256);
  resolve_crypto(handle, path, "EVP_DigestInit_ex", lib.digest_init_ex);
  resolve_crypto(handle, path, "EVP_DigestUpdate", lib.digest_update);
  resolve_crypto(handle, path, "EVP_DigestFinal_ex", lib.digest_final_ex);
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

// SHA-256 of the concatenation of `parts`.
Digest sha256(std::initializer_list<std::string_view> parts) {
  const Libcrypto& lib = libcrypto();
  const std::unique_ptr<EvpMdCtx, void (*)(EvpMdCtx*)> ctx(lib.md_ctx_new(), lib.md_ctx_free);
  Digest digest{};
  unsigned length = 0;
  bool ok = ctx && lib.digest_init_ex(ctx.get(), lib.sha256(), nullptr) == 1;
  for (std::string_view part : parts) {
    ok = ok && lib.digest_update(ctx.get(), part.data(), part.size()) == 1;
  }
  ok = ok && lib.digest_final_ex(ctx.get(), digest.data(), &length) == 1;
  if (!ok || length != digest.size()) {
    throw std::runtime_error("ProgramCache: libcrypto's SHA-256 failed");
  }
  return digest;
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
  out.reserve(kMagic.size() + 16 + key.size() + value.size() + 32);
  out.append(kMagic);
  append_u64(out, key.size());
  out.append(key);
  append_u64(out, value.size());
  out.append(value);
  const Digest checksum = sha256({key, value});
  out.append(reinterpret_cast<const char*>(checksum.data()), checksum.size());
  return out;
}

// The value of an entry file when it is whole, undamaged and stored under `key`.
std::optional<std::string> decode_entry(std::string_view data, std::string_view key) {
  if (!data.starts_with(kMagic)) {
    return std::nullopt;
  }
  std::size_t offset = kMagic.size();
  const auto key_size = read_u64(data, offset);
  if (!key_size || *key_size != key.size() || data.size() - offset < *key_size) {
    return std::nullopt;
  }
  const std::string_view stored_key = data.substr(offset, *key_size);
  offset += *key_size;
  const auto value_size = read_u64(data, offset);
  if (!value_size || data.size() - offset != *value_size + 32) {
    return std::nullopt;
  }
  const std::string_view value = data.substr(offset, *value_size);
  const std::string_view checksum = data.substr(offset + *value_size);
  const Digest expected = sha256({stored_key, value});
  if (stored_key != key ||
      std::memcmp(checksum.data(), expected.data(), expected.size()) != 0) {
    return std::nullopt;
  }
  return std::string(value);
}

// Read a regular file without following a symbolic link; nothing on any failure.
std::optional<std::string> read_entry_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    return std::nullopt;
  }
  std::string data;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    data.resize(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::read(fd, data.data() + done, data.size() - done);
      if (n <= 0) {
        break;
      }
      done += static_cast<std::size_t>(n);
    }
    data.resize(done);
  }
  ::close(fd);
  return data;
}

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
        std::to_string(st.st_uid) + ", not by this process's user " +
        std::to_string(::geteuid()) +
        "; a cache holds code the GPU runs, so use a directory of your own");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw std::invalid_argument(
        "FileProgramCache: refusing '" + dir.string() +
        "': it is writable by group or others (mode " +
        std::to_string((st.st_mode >> 6U) & 7U) + std::to_string((st.st_mode >> 3U) & 7U) +
        std::to_string(st.st_mode & 7U) +
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
    : FileProgramCache(new State{std::move(dir), on_warning, {}}, max_bytes) {  // NOLINT(cppcoreguidelines-owning-memory)
  if (max_bytes_ == 0) {
    throw std::invalid_argument("FileProgramCache: max_bytes must be > 0; for no size cap, leave it out or pass FileProgramCache::kNoSizeCap");
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
  return state_->dir / to_hex(sha256({key}));
}

std::optional<std::string> FileProgramCache::get(std::string_view key) {
  const std::filesystem::path path = entry_path(key);
  const std::optional<std::string> data = read_entry_file(path);
  if (!data) {
    return std::nullopt;
  }
  std::optional<std::string> value = decode_entry(*data, key);
  if (value) {
    // Refresh the modification time: eviction removes the least recently used first.
    static_cast<void>(::utimensat(AT_FDCWD, path.c_str(), nullptr, 0));
  }
  return value;
}

void FileProgramCache::put(std::string_view key, std::string_view value) {
  const std::string bytes = encode_entry(key, value);
  if (bytes.size() > max_bytes_) {
    return;
  }
  const std::filesystem::path target = entry_path(key);
  const std::filesystem::path temp = state_->dir / (std::string(kTempPrefix) + temp_suffix());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        S_IRUSR | S_IWUSR);
  if (fd < 0) {
    warn_once("cannot write to the program cache '" + state_->dir.string() +
              "' (" + std::strerror(errno) + "); compiling without caching");
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

std::string detail::sha256_hex(std::string_view data) { return to_hex(sha256({data})); }

void detail::check_libcrypto(std::initializer_list<const char*> candidates) {
  static_cast<void>(open_libcrypto(std::span(candidates.begin(), candidates.size())));
}

}  // namespace cuwrap
