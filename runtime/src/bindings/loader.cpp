// Opening the CUDA libraries and resolving entry points, once per process and
// thread-safe. See cuwrap/detail/loader.hpp for the design.
#include <cuwrap/detail/loader.hpp>
#include <cuwrap/detail/symbols.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/version.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace cuwrap {
namespace detail {
namespace {

thread_local std::string t_last_load_error;

// cuGetProcAddress as of CUDA 12 (the _v2 symbol) and before it.
using DriverGetVersion = CUresult (*)(int*);
// The last parameter is a CUdriverProcAddressQueryResult, an enum that cuda.h only has
// from CUDA 12.0 on; against CUDA 11.8 headers (whose drivers have only the four-argument
// form), so that the generated layer alone builds there, it is spelled as its underlying
// int. The pointer's type is the function's own where cuda.h has it: a call through a
// pointer of another type is undefined (clang's -fsanitize=function reports it).
#if CUDA_VERSION >= 12000
using ProcQueryResult = CUdriverProcAddressQueryResult;
constexpr ProcQueryResult kProcSymbolNotFound = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
constexpr ProcQueryResult kProcVersionNotSufficient = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
#else
using ProcQueryResult = int;
constexpr ProcQueryResult kProcSymbolNotFound = 1;
constexpr ProcQueryResult kProcVersionNotSufficient = 2;
#endif
using GetProcAddressV2 = CUresult (*)(const char*, void**, int, cuuint64_t, ProcQueryResult*);
using GetProcAddressV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

constexpr std::size_t kLibraryCount = sizeof(kLibraries) / sizeof(kLibraries[0]);

const LibraryInfo& info(Library library) { return kLibraries[static_cast<std::size_t>(library)]; }

// Places a toolkit library may live when the dynamic loader does not know it: the row's
// directories below each toolkit root.
std::vector<std::string> toolkit_candidates(const LibraryInfo& li) {
  std::vector<std::string> roots;
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(env); root != nullptr && *root != '\0') {
      roots.emplace_back(root);
    }
  }
  roots.emplace_back("/usr/local/cuda");
  std::vector<std::string> paths;
  for (const auto& root : roots) {
    std::string_view dirs = li.lib_dirs;
    while (!dirs.empty()) {
      const std::size_t colon = dirs.find(':');
      paths.push_back(root + "/" + std::string(dirs.substr(0, colon)) + "/" + li.soname);
      dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
    }
  }
  return paths;
}

// One opened library: the handle, or the reason it could not be opened.
struct OpenedLibrary {
  void* handle = nullptr;
  std::string path;
  std::string error;
  GetProcAddressV2 get_proc_v2 = nullptr;  // driver only
  GetProcAddressV1 get_proc_v1 = nullptr;  // driver only, drivers before CUDA 12
  int driver_version = 0;                  // driver only: cuDriverGetVersion()
};

// "CUDA 12.4 (12040)": how messages name a version.
std::string describe_version(int version) {
  return "CUDA " + version_string(version) + " (" + std::to_string(version) + ")";
}

// Read the driver's version through its exported cuDriverGetVersion (dlsym, not
// cuGetProcAddress: the version decides which entry points may be asked for). Leaves
// the reason in `opened.error` when the driver cannot say or is too old.
void read_driver_version(OpenedLibrary& opened) {
  const auto get_version =
      reinterpret_cast<DriverGetVersion>(::dlsym(opened.handle, "cuDriverGetVersion"));
  int version = 0;
  const CUresult status = get_version != nullptr ? get_version(&version) : CUDA_ERROR_NOT_FOUND;
  if (status != CUDA_SUCCESS || version <= 0) {
    opened.error = "cuwrap: " + opened.path +
                   (get_version == nullptr ? " exports no cuDriverGetVersion"
                                           : " failed cuDriverGetVersion (status " +
                                                 std::to_string(static_cast<int>(status)) + ")") +
                   "; it is not a usable NVIDIA driver library.";
    return;
  }
  opened.driver_version = version;
  if (version < kMinimumDriverVersion) {
    opened.error = "cuwrap: the installed NVIDIA driver (" + opened.path + ") supports " +
                   describe_version(version) + ", older than " +
                   describe_version(kMinimumDriverVersion) +
                   ", the oldest driver cuwrap runs on. Update the NVIDIA driver.";
  }
}

// A library linked into cuwrap (the table's statically linked rows): nothing to open; the
// reason when this build was configured without it.
OpenedLibrary open_linked(const LibraryInfo& li) {
  OpenedLibrary opened;
  opened.path = li.soname;
  if (li.symbol_count == 0 || li.addresses[0] == nullptr) {
    opened.error = std::string("cuwrap was built without ") + li.display + " (configure with -D" +
                   li.option + "=ON where the toolkit has " + li.soname + ")";
  }
  return opened;
}

OpenedLibrary open_library(Library library) {
  OpenedLibrary opened;
  const LibraryInfo& li = info(library);
  if (!li.generated) {
    opened.error = std::string("cuwrap: ") + li.header +
                   " was not found when cuwrap's bindings were generated, so cuwrap cannot "
                   "call " +
                   li.display + ". Regenerate cuwrap from a toolkit that has " + li.header +
                   " (cuwrap-gen looks next to cuda.h and, for nvvm.h, in "
                   "../nvvm/include).";
    return opened;
  }
  if (li.addresses != nullptr) {
    return open_linked(li);
  }
  std::vector<std::string> tried;
  const char* override_path = std::getenv(li.env);
  if (override_path != nullptr && *override_path != '\0') {
    tried.emplace_back(override_path);
  } else {
    tried.emplace_back(li.soname);
    for (auto& candidate : toolkit_candidates(li)) {
      tried.push_back(std::move(candidate));
    }
  }
  std::string reasons;
  for (const auto& path : tried) {
    opened.handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (opened.handle != nullptr) {
      opened.path = path;
      break;
    }
    const char* why = ::dlerror();
    reasons += "\n  " + path + ": " + (why != nullptr ? why : "not found");
  }
  if (opened.handle == nullptr) {
    opened.error =
        std::string("cuwrap: cannot load ") + li.display + " (tried:" + reasons + ")\n" +
        (library == Library::Driver
             ? "Install the NVIDIA driver (it provides libcuda.so.1), or set "
               "CUWRAP_LIBCUDA to the path of libcuda.so."
             : std::string("Add the directory holding ") + li.soname + " (in the CUDA toolkit's " +
                   li.lib_dirs + ") to LD_LIBRARY_PATH, set CUDA_HOME, or set " + li.env +
                   " to the library's path.");
    return opened;
  }
  if (library == Library::Driver) {
    opened.get_proc_v2 =
        reinterpret_cast<GetProcAddressV2>(::dlsym(opened.handle, "cuGetProcAddress_v2"));
    if (opened.get_proc_v2 == nullptr) {
      opened.get_proc_v1 =
          reinterpret_cast<GetProcAddressV1>(::dlsym(opened.handle, "cuGetProcAddress"));
    }
    if (opened.get_proc_v2 == nullptr && opened.get_proc_v1 == nullptr) {
      opened.error = "cuwrap: " + opened.path +
                     " has no cuGetProcAddress; the driver is too old for CUDA " +
                     std::to_string(kGeneratedCudaVersion / 1000) + "." +
                     std::to_string(kGeneratedCudaVersion % 1000 / 10) +
                     " bindings. Update the NVIDIA driver.";
      return opened;
    }
    read_driver_version(opened);
  }
  return opened;
}

const OpenedLibrary& opened(Library library) {
  if (info(library).driver_entry_points && info(library).generated) {
    library = Library::Driver;  // cudaGL.h's and cudaEGL.h's entry points are libcuda's
  }
  static OpenedLibrary libraries[kLibraryCount];
  static std::once_flag flags[kLibraryCount];
  const auto i = static_cast<std::size_t>(library);
  std::call_once(flags[i], [&] { libraries[i] = open_library(library); });
  return libraries[i];
}

// cuGetProcAddress(name, version) on the opened driver (version <= the driver's),
// then dlsym(symbol) for entry points the driver does not publish that way; nullptr
// when neither finds it.
void* driver_proc_address(const OpenedLibrary& lib, const char* proc_name, const char* symbol,
                          int version, bool per_thread) {
  void* fn = nullptr;
  const cuuint64_t flags =
      per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
  CUresult status = CUDA_ERROR_NOT_FOUND;
  if (lib.get_proc_v2 != nullptr) {
    ProcQueryResult found = kProcSymbolNotFound;
    status = lib.get_proc_v2(proc_name, &fn, version, flags, &found);
    if (status == CUDA_SUCCESS && found == kProcVersionNotSufficient) {
      fn = nullptr;
    }
  } else {
    status = lib.get_proc_v1(proc_name, &fn, version, flags);
  }
  if ((status != CUDA_SUCCESS || fn == nullptr) && !per_thread && symbol != nullptr) {
    // Entry points the driver does not publish through cuGetProcAddress. The
    // per-thread variants have other symbol names, so they get no such fallback.
    fn = ::dlsym(lib.handle, symbol);
  }
  return fn;
}

// Resolve one entry point; on failure fill `error` and return nullptr.
void* lookup(Library library, std::size_t index, bool per_thread, std::string& error,
             std::string& symbol_name) {
  const LibraryInfo& li = info(library);
  if (!li.generated) {
    error = opened(library).error;  // the header was missing: says so
    return nullptr;
  }
  if (index >= li.symbol_count) {
    error = "cuwrap: entry index " + std::to_string(index) + " out of range for " + li.display;
    return nullptr;
  }
  const Symbol& symbol = li.symbols[index];
  symbol_name = symbol.name;
  const OpenedLibrary& lib = opened(library);
  if (!lib.error.empty()) {
    error = lib.error;
    return nullptr;
  }
  void* fn = nullptr;
  if (library == Library::Driver || li.driver_entry_points) {
    int version = symbol.version != 0 ? symbol.version : kGeneratedCudaVersion;
    if (per_thread && symbol.ptds_version != 0) {
      version = symbol.ptds_version;
    }
    if (version > lib.driver_version) {
      // Asking cuGetProcAddress for an ABI newer than the driver's may hand back an
      // older variant of another signature: refuse instead of calling.
      error = std::string("cuwrap: ") + symbol.name + " needs a driver of " +
              describe_version(version) + "; the installed driver (" + lib.path + ") is " +
              describe_version(lib.driver_version) + ". Update the NVIDIA driver.";
      return nullptr;
    }
    const char* proc_name = symbol.proc_name != nullptr ? symbol.proc_name : symbol.name;
    fn = driver_proc_address(lib, proc_name, symbol.symbol, version, per_thread);
  } else if (li.addresses != nullptr) {
    fn = li.addresses[index];  // linked into cuwrap: open_linked checked the build has it
  } else {
    fn = ::dlsym(lib.handle, symbol.symbol);
  }
  if (fn == nullptr) {
    error = std::string("cuwrap: ") + symbol.name + " (" + symbol.symbol + ") not found in " +
            lib.path + "; the installed " + li.display + " is older than the CUDA " +
            std::to_string(kGeneratedCudaVersion / 1000) + "." +
            std::to_string(kGeneratedCudaVersion % 1000 / 10) +
            " headers the bindings were generated from. Update it, or regenerate cuwrap "
            "for the installed toolkit.";
  }
  return fn;
}

}  // namespace

void* resolve_entry(Library library, std::size_t index, bool per_thread) {
  std::string error;
  std::string symbol;
  void* fn = lookup(library, index, per_thread, error, symbol);
  if (fn == nullptr) {
    const OpenedLibrary& lib = opened(library);
    throw LoadError(lib.handle != nullptr ? lib.path : std::string(info(library).soname),
                    lib.handle != nullptr ? symbol : std::string(), error);
  }
  return fn;
}

void* try_resolve_entry(Library library, std::size_t index, bool per_thread) noexcept {
  try {
    std::string error;
    std::string symbol;
    void* fn = lookup(library, index, per_thread, error, symbol);
    if (fn == nullptr) {
      t_last_load_error = error;
    }
    return fn;
  } catch (...) {  // allocation failure while composing the message
    return nullptr;
  }
}

int loaded_driver_version() {
  const OpenedLibrary& lib = opened(Library::Driver);
  if (!lib.error.empty()) {
    throw LoadError(lib.handle != nullptr ? lib.path : std::string(info(Library::Driver).soname),
                    "", lib.error);
  }
  return lib.driver_version;
}

void* resolve_driver_proc(const char* name, int version) {
  const int installed = loaded_driver_version();
  const OpenedLibrary& lib = opened(Library::Driver);
  if (version > installed) {
    throw LoadError(lib.path, name,
                    std::string("cuwrap: ") + name + " needs a driver of " +
                        describe_version(version) + "; the installed driver (" + lib.path +
                        ") is " + describe_version(installed) + ".");
  }
  void* fn = driver_proc_address(lib, name, nullptr, version, false);
  if (fn == nullptr) {
    throw LoadError(lib.path, name,
                    std::string("cuwrap: ") + name + " (ABI of " + describe_version(version) +
                        ") not found in " + lib.path + ".");
  }
  return fn;
}

std::string library_path(Library library) {
  const OpenedLibrary& lib = opened(library);
  return lib.handle != nullptr ? lib.path : std::string(info(library).soname);
}

}  // namespace detail

std::string last_load_error() { return detail::t_last_load_error; }

}  // namespace cuwrap
