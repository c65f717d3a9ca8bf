// The checks behind cuwrap::view and cuwrap::std_view (<cuwrap/mdspan.hpp>): the
// non-template core, free of CCCL and of <mdspan>.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuwrap {

class BufferRef;

namespace detail {

/// Return `buffer`'s address for a view of `elements` elements of `element_size` bytes
/// aligned to `alignment`.
///
/// Throws std::invalid_argument naming `caller` when the elements need more bytes than
/// the buffer has (both sizes named) or when the address is not aligned to `alignment`;
/// std::logic_error for a closed Buffer (when it converts to the BufferRef).
void* view_address(BufferRef buffer, std::size_t elements, std::size_t element_size,
                   std::size_t alignment, const char* caller);

/// Check the extents of a view before its layout mapping is built (a mapping of extents
/// whose product its index type cannot hold is undefined): each of the `rank` extents,
/// and their product, is at most `max_index`. Throws std::invalid_argument naming
/// `caller`, the extent's position and value, or the product's overflow.
void check_view_extents(const std::uint64_t* extents, std::size_t rank, std::uint64_t max_index,
                        const char* caller);

/// Throw std::invalid_argument naming `caller`, the extent's `position` and its `value`.
[[noreturn]] void throw_negative_extent(std::size_t position, std::int64_t value,
                                        const char* caller);

}  // namespace detail
}  // namespace cuwrap
