// The argument check of the generated layer's typed launches (<cuwrap/kernel_arguments.hpp>).
#include <cuwrap/driver_raw.hpp>
#include <cuwrap/kernel_arguments.hpp>
#include <cuwrap/version.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace cuwrap::detail {

void check_function_arguments(CUfunction function, const std::size_t* sizes, std::size_t count,
                              const char* caller) {
#if CUDA_VERSION >= 12040
  // cuFuncGetParamInfo came with CUDA 12.4: never asked of an older driver.
  static const bool kHasParamInfo = driver_version() >= 12040;
  if (function == nullptr || !kHasParamInfo) {
    return;  // the launch reports a null function; an old driver cannot say
  }
  for (std::size_t index = 0; index <= count; ++index) {
    std::size_t offset = 0;
    std::size_t size = 0;
    const CUresult status = driver::raw::cuFuncGetParamInfo(function, index, &offset, &size);
    if (status == CUDA_ERROR_INVALID_VALUE) {  // one past the last parameter
      if (index < count) {
        throw std::invalid_argument(std::string(caller) + ": the kernel takes " +
                                    std::to_string(index) + " argument" + (index == 1 ? "" : "s") +
                                    "; " + std::to_string(count) + " were given");
      }
      return;
    }
    if (status != CUDA_SUCCESS) {
      return;  // no parameter information for this function: unchecked, as the C form
    }
    if (index == count) {
      throw std::invalid_argument(std::string(caller) + ": the kernel takes more than " +
                                  std::to_string(count) + " argument" + (count == 1 ? "" : "s") +
                                  "; " + std::to_string(count) + (count == 1 ? " was" : " were") +
                                  " given");
    }
    if (size != sizes[index]) {
      throw std::invalid_argument(std::string(caller) + ": argument " + std::to_string(index) +
                                  " is " + std::to_string(sizes[index]) +
                                  " bytes; the kernel's parameter " + std::to_string(index) +
                                  " is " + std::to_string(size) + " bytes");
    }
  }
#else
  static_cast<void>(function);
  static_cast<void>(sizes);
  static_cast<void>(count);
  static_cast<void>(caller);
#endif
}

}  // namespace cuwrap::detail
