// The checks behind cuwrap::view. See cuwrap/detail/buffer_view.hpp.
#include <cuwrap/buffer.hpp>
#include <cuwrap/detail/buffer_view.hpp>

#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

namespace cuwrap::detail {

void* view_address(BufferRef buffer, std::size_t elements, std::size_t element_size,
                   std::size_t alignment, const char* caller) {
  const std::size_t size = buffer.size();
  const CUdeviceptr address = buffer.handle();
  if (element_size != 0 && elements > std::numeric_limits<std::size_t>::max() / element_size) {
    throw std::invalid_argument(std::string(caller) + ": " + std::to_string(elements) +
                                " elements of " + std::to_string(element_size) +
                                " bytes overflow std::size_t; the buffer has " +
                                std::to_string(size) + " bytes");
  }
  const std::size_t bytes = elements * element_size;
  if (bytes > size) {
    throw std::invalid_argument(
        std::string(caller) + ": the extents need " + std::to_string(bytes) + " bytes (" +
        std::to_string(elements) + " elements of " + std::to_string(element_size) +
        " bytes), more than the buffer's " + std::to_string(size) + " bytes");
  }
  if (alignment != 0 && address % alignment != 0) {
    std::ostringstream message;
    message << caller << ": the buffer's address 0x" << std::hex << address << std::dec
            << " is not aligned to " << alignment << " bytes, the alignment of the element type";
    throw std::invalid_argument(message.str());
  }
  return reinterpret_cast<void*>(address);
}

void check_view_extents(const std::uint64_t* extents, std::size_t rank, std::uint64_t max_index,
                        const char* caller) {
  bool empty = false;  // an extent of 0: no elements, whatever the others multiply to
  for (std::size_t i = 0; i < rank; ++i) {
    if (extents[i] > max_index) {
      throw std::invalid_argument(std::string(caller) + ": extent " + std::to_string(i) + " is " +
                                  std::to_string(extents[i]) +
                                  ", more than the index type holds (" + std::to_string(max_index) +
                                  ")");
    }
    empty = empty || extents[i] == 0;
  }
  std::uint64_t product = 1;
  for (std::size_t i = 0; i < rank && !empty; ++i) {
    if (product > max_index / extents[i]) {
      throw std::invalid_argument(std::string(caller) +
                                  ": the product of the extents exceeds what the index type "
                                  "holds (" +
                                  std::to_string(max_index) + ") at extent " + std::to_string(i) +
                                  " (" + std::to_string(extents[i]) + ")");
    }
    product *= extents[i];
  }
}

void throw_negative_extent(std::size_t position, std::int64_t value, const char* caller) {
  throw std::invalid_argument(std::string(caller) + ": extent " + std::to_string(position) +
                              " is " + std::to_string(value) + ", a negative size");
}

}  // namespace cuwrap::detail
