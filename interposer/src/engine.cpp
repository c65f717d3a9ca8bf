// The interposer's engine and its exported entry points. See engine.hpp and
// docs/interposer.md.
#include "engine.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cuwrap::interposer {
namespace {

using GetProcAddressV2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);
using GetProcAddressV1 = CUresult (*)(const char*, void**, int, cuuint64_t);
using DriverGetVersion = CUresult (*)(int*);

constexpr CUresult kDefaultFaultStatus = CUDA_ERROR_OUT_OF_MEMORY;

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

void complain(const std::string& message) {
  std::fprintf(stderr, "cuwrap-interposer: %s\n", message.c_str());
}

// "12040" or "12.4" → 12040; 0 when it is neither.
int parse_version(const char* text) {
  char* end = nullptr;
  const long major = std::strtol(text, &end, 10);
  if (end == text || major <= 0) {
    return 0;
  }
  if (*end == '\0') {
    return static_cast<int>(major);
  }
  if (*end != '.') {
    return 0;
  }
  const char* minor_text = end + 1;
  const long minor = std::strtol(minor_text, &end, 10);
  return end != minor_text && *end == '\0' && minor >= 0 && minor < 100
             ? static_cast<int>(major * 1000 + minor * 10)
             : 0;
}

const char* status_name(CUresult status) {
  for (std::size_t i = 0; i < kStatusCount; ++i) {
    if (kStatuses[i].value == status) {
      return kStatuses[i].name;
    }
  }
  return nullptr;
}

std::string status_text(CUresult status) {
  const char* name = status_name(status);
  return name != nullptr ? name : "CUresult " + std::to_string(static_cast<int>(status));
}

// Where one live handle came from.
struct Origin {
  const char* function;
  std::uint64_t call;
};

// The interposer's whole state, made on first use and never destroyed (wrappers may
// run during exit, after static destructors).
struct State {
  // The real driver.
  void* handle = nullptr;
  std::string path;
  std::string open_error;
  GetProcAddressV2 get_proc_v2 = nullptr;
  GetProcAddressV1 get_proc_v1 = nullptr;
  DriverGetVersion driver_get_version = nullptr;
  std::unique_ptr<std::atomic<void*>[]> real;
  std::unordered_map<std::string_view, std::vector<std::size_t>> by_name;

  // Configuration.
  std::uint64_t fault_at = 0;  // 0: no fault
  std::string fault_function;  // "" counts every entry point
  CUresult fault_status = kDefaultFaultStatus;
  std::vector<char> counted;  // per entry: counts towards CUWRAP_FAULT_AT
  int emulated_version = 0;   // 0: answer as the real driver
  bool trace = false;
  std::FILE* trace_out = stderr;
  std::string report_path;

  // Counters and live handles.
  std::atomic<std::uint64_t> calls{0};  // every wrapped call (trace numbers)
  std::atomic<std::uint64_t> counted_calls{0};
  std::atomic<bool> fired{false};
  std::mutex mutex;  // guards everything below and the trace output
  const char* fault_function_hit = "";
  std::uint64_t fault_call = 0;
  std::map<std::pair<std::string_view, std::uint64_t>, std::vector<Origin>> live;
  std::vector<std::pair<std::string_view, std::uint64_t>> abandoned;
};

void configure(State& s) {
  if (const char* at = env("CUWRAP_FAULT_AT")) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(at, &end, 10);
    if (end == at || *end != '\0' || n == 0) {
      complain(std::string("CUWRAP_FAULT_AT=") + at +
               " is not a call number (1, 2, ...); no fault is injected");
    } else {
      s.fault_at = n;
    }
  }
  if (const char* fn = env("CUWRAP_FAULT_FUNCTION")) {
    s.fault_function = fn;
  }
  if (const char* status = env("CUWRAP_FAULT_STATUS")) {
    char* end = nullptr;
    const long number = std::strtol(status, &end, 10);
    bool ok = false;
    if (end != status && *end == '\0') {
      s.fault_status = static_cast<CUresult>(number);
      ok = number != 0;
    } else {
      for (std::size_t i = 0; i < kStatusCount; ++i) {
        if (std::strcmp(kStatuses[i].name, status) == 0) {
          s.fault_status = kStatuses[i].value;
          ok = s.fault_status != CUDA_SUCCESS;
        }
      }
    }
    if (!ok) {
      complain(std::string("CUWRAP_FAULT_STATUS=") + status +
               " is not an error status (a CUresult name such as CUDA_ERROR_OUT_OF_MEMORY, or its "
               "number); no fault is injected");
      s.fault_at = 0;
    }
  }
  s.counted.assign(kEntryCount, 1);
  if (!s.fault_function.empty()) {
    bool known = false;
    for (std::size_t i = 0; i < kEntryCount; ++i) {
      const bool match =
          s.fault_function == kEntries[i].function || s.fault_function == kEntries[i].name;
      s.counted[i] = match ? 1 : 0;
      known = known || match;
    }
    if (!known) {
      complain("CUWRAP_FAULT_FUNCTION=" + s.fault_function + " is not a driver function of CUDA " +
               std::to_string(kTableCudaVersion) + "; no call is counted");
    }
  }
  if (const char* version = env("CUWRAP_EMULATE_DRIVER_VERSION")) {
    s.emulated_version = parse_version(version);
    if (s.emulated_version == 0) {
      complain(std::string("CUWRAP_EMULATE_DRIVER_VERSION=") + version +
               " is not a CUDA version (12040 or 12.4); the real driver's version is reported");
    }
  }
  const char* trace = env("CUWRAP_TRACE");
  const char* trace_file = env("CUWRAP_TRACE_FILE");
  s.trace = (trace != nullptr && std::strcmp(trace, "0") != 0) || trace_file != nullptr;
  if (trace_file != nullptr) {
    s.trace_out = std::fopen(trace_file, "a");
    if (s.trace_out == nullptr) {
      complain(std::string("cannot open CUWRAP_TRACE_FILE=") + trace_file + ": " +
               std::strerror(errno) + "; tracing to stderr");
      s.trace_out = stderr;
    }
  }
  if (const char* report = env("CUWRAP_HANDLE_REPORT")) {
    s.report_path = report;
  }
}

void open_driver(State& s) {
  const char* path = env("CUWRAP_INTERPOSER_LIBCUDA");
  s.path = path != nullptr ? path : "libcuda.so.1";
  s.handle = ::dlopen(s.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (s.handle == nullptr) {
    const char* why = ::dlerror();
    s.open_error = "cannot open the real driver " + s.path + ": " +
                   (why != nullptr ? why : "not found") +
                   " (set CUWRAP_INTERPOSER_LIBCUDA to its path)";
    complain(s.open_error);
    return;
  }
  s.get_proc_v2 = reinterpret_cast<GetProcAddressV2>(::dlsym(s.handle, "cuGetProcAddress_v2"));
  s.get_proc_v1 = reinterpret_cast<GetProcAddressV1>(::dlsym(s.handle, "cuGetProcAddress"));
  s.driver_get_version =
      reinterpret_cast<DriverGetVersion>(::dlsym(s.handle, "cuDriverGetVersion"));
  if (s.get_proc_v2 == nullptr && s.get_proc_v1 == nullptr) {
    s.open_error = s.path + " has no cuGetProcAddress";
    complain(s.open_error);
  }
}

State& state() {
  static State* const s = [] {
    auto* made = new State;  // never deleted: see State
    made->real = std::make_unique<std::atomic<void*>[]>(kEntryCount);
    for (std::size_t i = 0; i < kEntryCount; ++i) {
      made->by_name[kEntries[i].name].push_back(i);
    }
    configure(*made);
    open_driver(*made);
    return made;
  }();
  return *s;
}

// The table entry whose wrapper answers a request for `name` at `version`, or null:
// only a request for exactly the ABI version the wrapper was generated for is wrapped.
const Entry* find_entry(const State& s, const char* name, int version, bool per_thread,
                        std::size_t& index) {
  const auto it = s.by_name.find(name);
  if (it == s.by_name.end()) {
    return nullptr;
  }
  for (const std::size_t i : it->second) {
    if (kEntries[i].per_thread == per_thread && kEntries[i].version == version) {
      index = i;
      return &kEntries[i];
    }
  }
  return nullptr;
}

// Trace text of one argument.
void append_value(std::string& out, const ArgValue& a) {
  char buffer[64];
  switch (a.kind) {
    case ArgValue::Kind::Pointer:
      std::snprintf(buffer, sizeof buffer, "0x%" PRIx64, a.bits);
      break;
    case ArgValue::Kind::Signed:
      std::snprintf(buffer, sizeof buffer, "%" PRId64, static_cast<std::int64_t>(a.bits));
      break;
    case ArgValue::Kind::Unsigned:
      std::snprintf(buffer, sizeof buffer, "%" PRIu64, a.bits);
      break;
    case ArgValue::Kind::Float:
      std::snprintf(buffer, sizeof buffer, "%g", a.real);
      break;
    case ArgValue::Kind::Other:
      std::snprintf(buffer, sizeof buffer, "{...}");
      break;
  }
  out += buffer;
}

void trace_call(State& s, const Entry& e, std::uint64_t call, CUresult status, bool injected,
                const ArgValue* args) {
  std::string line = "cuwrap-trace: #" + std::to_string(call) + " " + e.function + "(";
  std::string outputs;
  std::string_view names = e.params;
  for (int i = 0; !names.empty(); ++i) {
    const auto comma = names.find(',');
    const std::string_view name = names.substr(0, comma);
    names = comma == std::string_view::npos ? std::string_view() : names.substr(comma + 1);
    line += (i == 0 ? "" : ", ") + std::string(name) + "=";
    ArgValue shown = args[i];
    if (i < 32 && (e.hex_mask >> i & 1u) != 0) {
      shown.kind = ArgValue::Kind::Pointer;
    }
    append_value(line, shown);
    const bool output = i < 32 && (e.out_mask >> i & 1u) != 0;
    if (output && status == CUDA_SUCCESS && args[i].read != nullptr && args[i].bits != 0) {
      outputs += (outputs.empty() ? " -> " : ", ") + std::string(name) + "=";
      ArgValue pointee = args[i];
      pointee.bits =
          args[i].read(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(args[i].bits)));
      pointee.kind = ArgValue::Kind::Pointer;
      append_value(outputs, pointee);
    }
  }
  line += ") = " + status_text(status) + (injected ? " (injected)" : "") + outputs + "\n";
  const std::lock_guard<std::mutex> lock(s.mutex);
  std::fputs(line.c_str(), s.trace_out);
  std::fflush(s.trace_out);
}

void track_handle(State& s, const Entry& e, std::uint64_t call, CUresult status, bool injected,
                  const ArgValue* args) {
  const ArgValue& a = args[e.handle_param];
  const std::lock_guard<std::mutex> lock(s.mutex);
  if (e.effect == Effect::Destroy) {
    const auto it = s.live.find({e.kind, a.bits});
    if (it == s.live.end()) {
      return;  // not made through the interposer (or already released)
    }
    if (status == CUDA_SUCCESS || injected) {
      if (injected) {  // the release never reached the driver: the handle is abandoned
        s.abandoned.emplace_back(e.kind, a.bits);
      }
      it->second.pop_back();
      if (it->second.empty()) {
        s.live.erase(it);
      }
    }
    return;
  }
  if (status != CUDA_SUCCESS) {
    return;
  }
  std::uint64_t key = a.bits;
  if (e.effect == Effect::Create) {
    if (a.read == nullptr || a.bits == 0) {
      return;
    }
    key = a.read(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(a.bits)));
  }
  s.live[{e.kind, key}].push_back(Origin{e.function, call});
}

void write_report(State& s, std::FILE* out) {
  const std::lock_guard<std::mutex> lock(s.mutex);
  std::size_t live = 0;
  std::fprintf(out, "cuwrap-interposer report\ncalls %" PRIu64 "\ncounted %" PRIu64 "\n",
               s.calls.load(), s.counted_calls.load());
  if (s.fault_call != 0) {
    std::fprintf(out, "fault %" PRIu64 " %s %s\n", s.fault_call, s.fault_function_hit,
                 status_text(s.fault_status).c_str());
  }
  for (const auto& [key, origins] : s.live) {
    for (const auto& origin : origins) {
      std::fprintf(out, "live %.*s 0x%" PRIx64 " %s #%" PRIu64 "\n",
                   static_cast<int>(key.first.size()), key.first.data(), key.second,
                   origin.function, origin.call);
      ++live;
    }
  }
  for (const auto& [kind, key] : s.abandoned) {
    std::fprintf(out, "abandoned %.*s 0x%" PRIx64 "\n", static_cast<int>(kind.size()), kind.data(),
                 key);
  }
  std::fprintf(out, "total live %zu abandoned %zu\n", live, s.abandoned.size());
}

std::atomic<bool> g_used{false};  // set once any entry point ran: only then is there a report

// The exit report; runs after the program's static destructors (which may release).
__attribute__((destructor)) void report_at_exit() {
  if (!g_used.load()) {
    return;
  }
  State& s = state();
  if (s.report_path.empty()) {
    write_report(s, stderr);
    return;
  }
  std::FILE* out = std::fopen(s.report_path.c_str(), "w");
  if (out == nullptr) {
    complain("cannot write CUWRAP_HANDLE_REPORT=" + s.report_path + ": " + std::strerror(errno));
    write_report(s, stderr);
    return;
  }
  write_report(s, out);
  std::fclose(out);
}

CUresult get_proc(const char* symbol, void** pfn, int version, cuuint64_t flags,
                  CUdriverProcAddressQueryResult* symbol_status);

CUresult own_driver_get_version(int* version) {
  State& s = state();
  if (version == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (s.driver_get_version == nullptr) {
    return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
  }
  const CUresult status = s.driver_get_version(version);
  if (status == CUDA_SUCCESS && s.emulated_version != 0) {
    *version = std::min(*version, s.emulated_version);
  }
  return status;
}

CUresult own_get_proc_v1(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return get_proc(symbol, pfn, version, flags, nullptr);
}

CUresult get_proc(const char* symbol, void** pfn, int version, cuuint64_t flags,
                  CUdriverProcAddressQueryResult* symbol_status) {
  g_used = true;
  State& s = state();
  if (symbol == nullptr || pfn == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!s.open_error.empty()) {
    return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
  }
  const int effective = s.emulated_version != 0 ? std::min(version, s.emulated_version) : version;
  const std::string_view name = symbol;
  void* own = nullptr;
  if (name == "cuGetProcAddress") {
    own = effective >= 12000 ? reinterpret_cast<void*>(&cuGetProcAddress_v2)
                             : reinterpret_cast<void*>(&own_get_proc_v1);
  } else if (name == "cuDriverGetVersion") {
    own = reinterpret_cast<void*>(&own_driver_get_version);
  }
  if (own != nullptr) {
    *pfn = own;
    if (symbol_status != nullptr) {
      *symbol_status = CU_GET_PROC_ADDRESS_SUCCESS;
    }
    return CUDA_SUCCESS;
  }
  void* real = nullptr;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult status = CUDA_ERROR_NOT_FOUND;
  if (s.get_proc_v2 != nullptr) {
    status = s.get_proc_v2(symbol, &real, effective, flags, &found);
  } else {
    status = s.get_proc_v1(symbol, &real, effective, flags);
    found = status == CUDA_SUCCESS && real != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS
                                                      : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  std::size_t index = 0;
  const Entry* entry = find_entry(s, symbol, effective, per_thread, index);
  if (entry != nullptr && (status != CUDA_SUCCESS || real == nullptr) &&
      found != CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) {
    // Entry points a driver exports without publishing them through cuGetProcAddress.
    real = ::dlsym(s.handle, entry->symbol);
    if (real != nullptr) {
      status = CUDA_SUCCESS;
      found = CU_GET_PROC_ADDRESS_SUCCESS;
    }
  }
  if (symbol_status != nullptr) {
    *symbol_status = found;
  }
  if (status != CUDA_SUCCESS || real == nullptr || found != CU_GET_PROC_ADDRESS_SUCCESS ||
      entry == nullptr) {
    *pfn = real;
    return status;
  }
  s.real[index].store(real, std::memory_order_release);
  *pfn = entry->wrapper;
  return CUDA_SUCCESS;
}

}  // namespace

void* real_entry(std::size_t entry) noexcept {
  return state().real[entry].load(std::memory_order_acquire);
}

bool begin_call(std::size_t entry, CUresult& injected) noexcept {
  State& s = state();
  if (s.counted[entry] == 0) {
    return false;
  }
  const std::uint64_t n = s.counted_calls.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n != s.fault_at || s.fired.exchange(true)) {
    return false;
  }
  {
    const std::lock_guard<std::mutex> lock(s.mutex);
    s.fault_call = n;
    s.fault_function_hit = kEntries[entry].function;
  }
  injected = s.fault_status;
  return true;
}

void end_call(std::size_t entry, CUresult status, bool injected, const ArgValue* args) noexcept {
  State& s = state();
  const Entry& e = kEntries[entry];
  const std::uint64_t call = s.calls.fetch_add(1, std::memory_order_relaxed) + 1;
  try {
    if (s.trace) {
      trace_call(s, e, call, status, injected, args);
    }
    if (e.effect != Effect::None) {
      track_handle(s, e, call, status, injected, args);
    }
  } catch (...) {  // out of memory while tracing: the call itself is unaffected
    complain("out of memory while recording a call");
  }
}

}  // namespace cuwrap::interposer

// The plain symbols a loader looks up with dlsym. cuda.h declares cuGetProcAddress as
// a macro for cuGetProcAddress_v2; the CUDA 11 form keeps the plain name.
#undef cuGetProcAddress
#define CUWRAP_INTERPOSER_EXPORT extern "C" __attribute__((visibility("default")))

// NOLINTNEXTLINE(readability-identifier-naming): the driver's C names
CUWRAP_INTERPOSER_EXPORT CUresult CUDAAPI
cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                    CUdriverProcAddressQueryResult* symbol_status) {
  return cuwrap::interposer::get_proc(symbol, pfn, cuda_version, flags, symbol_status);
}

// NOLINTNEXTLINE(readability-identifier-naming)
CUWRAP_INTERPOSER_EXPORT CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn,
                                                           int cuda_version, cuuint64_t flags) {
  return cuwrap::interposer::get_proc(symbol, pfn, cuda_version, flags, nullptr);
}

CUWRAP_INTERPOSER_EXPORT CUresult CUDAAPI cuDriverGetVersion(int* driver_version) {
  cuwrap::interposer::g_used = true;
  return cuwrap::interposer::own_driver_get_version(driver_version);
}

CUWRAP_INTERPOSER_EXPORT CUresult CUDAAPI cuInit(unsigned int flags) {
  void* fn = nullptr;
  const CUresult status =
      cuwrap::interposer::get_proc("cuInit", &fn, 2000, CU_GET_PROC_ADDRESS_DEFAULT, nullptr);
  if (status != CUDA_SUCCESS || fn == nullptr) {
    return status != CUDA_SUCCESS ? status : CUDA_ERROR_NOT_FOUND;
  }
  return reinterpret_cast<CUresult (*)(unsigned int)>(fn)(flags);
}
