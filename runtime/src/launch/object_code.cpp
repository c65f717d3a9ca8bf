// ObjectCode: code storage, lazy thread-safe loading through the library API, and
// kernel lookup by symbol or name expression.
#include "launch/kernel_impl.hpp"

#include <cuwrap/buffer.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/kernel.hpp>
#include <cuwrap/object_code.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace cuwrap {
namespace detail {

/// Return whether the driver can load `type` directly (the others are link inputs).
bool is_loadable(TargetType type) noexcept {
  return type == TargetType::Cubin || type == TargetType::Ptx || type == TargetType::Fatbin;
}

/// What every copy of an ObjectCode shares: the code and, once loaded, the library.
struct ObjectCodeImpl : RefCounted {
  TargetType type = TargetType::Cubin;
  std::string code;  // std::string so that PTX is NUL-terminated for the driver
  std::string name;
  std::vector<std::pair<std::string, std::string>> lowered;  // expression → symbol
  mutable std::atomic<CUlibrary> library{nullptr};
  mutable std::mutex load_mutex;

  ObjectCodeImpl() = default;
  ObjectCodeImpl(const ObjectCodeImpl&) = delete;
  ObjectCodeImpl& operator=(const ObjectCodeImpl&) = delete;
  ~ObjectCodeImpl() {
    if (CUlibrary lib = library.load(std::memory_order_acquire); lib != nullptr) {
      detail::report_release_failure(driver::raw::cuLibraryUnload(lib), "cuLibraryUnload",
                                     "ObjectCode");
    }
  }

  // Load the code with cuLibraryLoadData on first use; later calls cost one load.
  CUlibrary load() const {
    CUlibrary lib = library.load(std::memory_order_acquire);
    if (lib != nullptr) [[likely]] {
      return lib;
    }
    if (!is_loadable(type)) {
      throw std::logic_error("ObjectCode '" + name + "' holds " + std::string(to_string(type)) +
                             " code, which cannot be loaded for execution: link it with "
                             "Linker first");
    }
    const std::lock_guard<std::mutex> lock(load_mutex);
    lib = library.load(std::memory_order_relaxed);
    if (lib == nullptr) {
      ensure_driver_initialized();
      lib = driver::cuLibraryLoadData(code.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
      library.store(lib, std::memory_order_release);
    }
    return lib;
  }

  // Return the symbol for `name`: the lowered name of a name expression, else `name`.
  std::string symbol_for(std::string_view name_or_expression) const {
    for (const auto& [expression, symbol] : lowered) {
      if (expression == name_or_expression) {
        return symbol;
      }
    }
    return std::string(name_or_expression);
  }

  // Return the symbol names of every kernel in the loaded library.
  std::vector<std::string> kernel_names() const {
    const CUlibrary lib = load();
    const unsigned count = driver::cuLibraryGetKernelCount(lib);
    std::vector<CUkernel> kernels(count);
    if (count > 0) {
      driver::cuLibraryEnumerateKernels(kernels.data(), count, lib);
    }
    std::vector<std::string> names;
    names.reserve(count);
    for (CUkernel kernel : kernels) {
      names.emplace_back(driver::cuKernelGetName(kernel));
    }
    return names;
  }
};

}  // namespace detail

namespace {

// A file that cannot be read is a std::system_error carrying the errno of the call that
// failed and naming the path, as every file error of cuwrap.
[[noreturn]] void throw_file_error(int error, const char* what, const std::filesystem::path& path) {
  throw std::system_error(
      error, std::generic_category(),
      std::string("ObjectCode::from_file: cannot ") + what + " '" + path.string() + "'");
}

std::string read_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw_file_error(errno, "open", path);
  }
  std::string data;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    throw_file_error(error, "stat", path);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw_file_error(EISDIR, "read", path);
  }
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n == 0) {
      break;
    }
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      const int error = errno;
      ::close(fd);
      throw_file_error(error, "read", path);
    }
    data.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return data;
}

ObjectCode make(TargetType type, std::span<const std::byte> data, std::string name,
                ObjectCode::SymbolMapping mapping) {
  return ObjectCode::from_parts(
      type, std::string(reinterpret_cast<const char*>(data.data()), data.size()), std::move(name),
      std::move(mapping));
}

}  // namespace

std::string_view to_string(TargetType type) noexcept {
  switch (type) {
    case TargetType::Ptx:
      return "ptx";
    case TargetType::Cubin:
      return "cubin";
    case TargetType::Ltoir:
      return "ltoir";
    case TargetType::Fatbin:
      return "fatbin";
    case TargetType::Object:
      return "object";
    case TargetType::Library:
      return "library";
  }
  return "unknown";
}

namespace detail {
void ref_acquire(const ObjectCodeImpl* impl) noexcept { acquire_counted(impl); }
void ref_release(const ObjectCodeImpl* impl) noexcept { release_counted(impl); }
}  // namespace detail

ObjectCode::ObjectCode(detail::Ref<detail::ObjectCodeImpl> impl) : impl_(std::move(impl)) {}

ObjectCode ObjectCode::from_parts(TargetType type, std::string code, std::string name,
                                  std::vector<std::pair<std::string, std::string>> lowered) {
  if (code.empty()) {
    throw std::invalid_argument("ObjectCode: the " + std::string(to_string(type)) + " code of '" +
                                name + "' is empty");
  }
  auto impl = detail::make_ref<detail::ObjectCodeImpl>();
  impl->type = type;
  impl->code = std::move(code);
  impl->name = std::move(name);
  impl->lowered = std::move(lowered);
  return ObjectCode(std::move(impl));
}

ObjectCode ObjectCode::from_cubin(std::span<const std::byte> data, std::string name,
                                  SymbolMapping symbol_mapping) {
  return make(TargetType::Cubin, data, std::move(name), std::move(symbol_mapping));
}

ObjectCode ObjectCode::from_ptx(std::string ptx, std::string name, SymbolMapping symbol_mapping) {
  // The driver reads PTX up to the first NUL; a copy from a file may carry one.
  if (const auto nul = ptx.find('\0'); nul != std::string::npos) {
    ptx.resize(nul);
  }
  return from_parts(TargetType::Ptx, std::move(ptx), std::move(name), std::move(symbol_mapping));
}

ObjectCode ObjectCode::from_ltoir(std::span<const std::byte> data, std::string name,
                                  SymbolMapping symbol_mapping) {
  return make(TargetType::Ltoir, data, std::move(name), std::move(symbol_mapping));
}

ObjectCode ObjectCode::from_fatbin(std::span<const std::byte> data, std::string name,
                                   SymbolMapping symbol_mapping) {
  return make(TargetType::Fatbin, data, std::move(name), std::move(symbol_mapping));
}

ObjectCode ObjectCode::from_object(std::span<const std::byte> data, std::string name,
                                   SymbolMapping symbol_mapping) {
  return make(TargetType::Object, data, std::move(name), std::move(symbol_mapping));
}

ObjectCode ObjectCode::from_library(std::span<const std::byte> data, std::string name,
                                    SymbolMapping symbol_mapping) {
  return make(TargetType::Library, data, std::move(name), std::move(symbol_mapping));
}

ObjectCode ObjectCode::from_file_named(std::string_view path, SymbolMapping symbol_mapping) {
  return from_file(std::filesystem::path(path), std::move(symbol_mapping));
}

ObjectCode ObjectCode::from_file(const std::filesystem::path& path, SymbolMapping symbol_mapping) {
  static constexpr std::pair<std::string_view, TargetType> kExtensions[] = {
      {".cubin", TargetType::Cubin},   {".ptx", TargetType::Ptx},  {".ltoir", TargetType::Ltoir},
      {".fatbin", TargetType::Fatbin}, {".o", TargetType::Object}, {".a", TargetType::Library}};
  const std::string extension = path.extension().string();
  const auto* found = std::find_if(std::begin(kExtensions), std::end(kExtensions),
                                   [&](const auto& entry) { return entry.first == extension; });
  if (found == std::end(kExtensions)) {
    throw std::invalid_argument("ObjectCode::from_file: unknown extension '" + extension +
                                "' of '" + path.string() +
                                "' (expected .cubin, .ptx, .ltoir, .fatbin, .o or .a)");
  }
  std::string data = read_file(path);
  std::string name = path.filename().string();
  if (found->second == TargetType::Ptx) {
    return from_ptx(std::move(data), std::move(name), std::move(symbol_mapping));
  }
  return from_parts(found->second, std::move(data), std::move(name), std::move(symbol_mapping));
}

Kernel ObjectCode::get_kernel(std::string_view name) const {
  if (!detail::is_loadable(impl_->type)) {
    throw std::logic_error("ObjectCode::get_kernel('" + std::string(name) + "'): '" + impl_->name +
                           "' holds " + std::string(to_string(impl_->type)) +
                           " code, which cannot be loaded for execution: link it with "
                           "Linker first");
  }
  const CUlibrary lib = impl_->load();
  std::string symbol = impl_->symbol_for(name);
  CUkernel kernel = nullptr;
  const CUresult status = driver::raw::cuLibraryGetKernel(&kernel, lib, symbol.c_str());
  if (status != CUDA_SUCCESS) {
    // The driver answers CUDA_ERROR_NOT_FOUND for an unknown name; say which exist.
    const std::vector<std::string> names = impl_->kernel_names();
    if (std::find(names.begin(), names.end(), symbol) == names.end()) {
      std::string list;
      for (const auto& n : names) {
        list += (list.empty() ? "'" : ", '") + n + "'";
      }
      throw std::invalid_argument("ObjectCode::get_kernel: no kernel '" + std::string(name) +
                                  "' in '" + impl_->name +
                                  "'; kernels: " + (list.empty() ? std::string("none") : list));
    }
    detail::check(status, "cuLibraryGetKernel");
  }
  auto kernel_impl = detail::make_ref<detail::KernelImpl>();
  kernel_impl->library = impl_;
  kernel_impl->handle = kernel;
  kernel_impl->name = std::string(name);
  kernel_impl->symbol = std::move(symbol);
  kernel_impl->params = detail::query_param_info(kernel);
  return Kernel(std::move(kernel_impl));
}

std::string ObjectCode::lowered_name(std::string_view name_expression) const {
  for (const auto& [expression, symbol] : impl_->lowered) {
    if (expression == name_expression) {
      return symbol;
    }
  }
  std::string known;
  for (const auto& entry : impl_->lowered) {
    known += (known.empty() ? "'" : ", '") + entry.first + "'";
  }
  throw std::invalid_argument(
      "ObjectCode::lowered_name: '" + std::string(name_expression) +
      "' was not given as a name expression when '" + impl_->name +
      "' was compiled; known expressions: " + (known.empty() ? std::string("none") : known));
}

const std::vector<std::pair<std::string, std::string>>& ObjectCode::name_expressions() const {
  return impl_->lowered;
}

TargetType ObjectCode::code_type() const { return impl_->type; }

std::span<const char> ObjectCode::code() const { return {impl_->code.data(), impl_->code.size()}; }

const std::string& ObjectCode::name() const { return impl_->name; }

CUlibrary ObjectCode::handle() const { return impl_->load(); }

BufferRef ObjectCode::get_global(std::string_view name, const Device& device) const {
  const CUlibrary lib = impl_->load();
  const std::string symbol = impl_->symbol_for(name);
  CUdeviceptr address = 0;
  std::size_t bytes = 0;
  CUresult status = CUDA_SUCCESS;
  {
    // The driver answers for the current context: the device's primary one, for this call.
    const detail::ScopedContext scope(device.context());
    status = driver::raw::cuLibraryGetGlobal(&address, &bytes, lib, symbol.c_str());
  }
  if (status == CUDA_ERROR_NOT_FOUND) {
    throw std::invalid_argument("ObjectCode::get_global: no __device__ or __constant__ variable '" +
                                std::string(name) + "' in '" + impl_->name + "'");
  }
  detail::check(status, "cuLibraryGetGlobal");
  return {address, bytes};
}

std::vector<std::string> ObjectCode::kernel_names() const { return impl_->kernel_names(); }

}  // namespace cuwrap
