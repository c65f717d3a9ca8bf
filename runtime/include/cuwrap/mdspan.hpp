// Multidimensional views of a Buffer: cuwrap::view<T>(buffer, extents...) gives a
// cuda::std::mdspan (CCCL; usable in host code and, passed by value to a kernel, in
// device code), cuwrap::std_view<T>(buffer, extents...) a std::mdspan where the standard
// library has one (__cpp_lib_mdspan; libstdc++ 12 and 13 do not, and then it is not
// declared).
//
// Free functions, not members of Buffer: a member's return type would need mdspan in
// <cuwrap/buffer.hpp>, which every cuwrap header includes, and CCCL there would slow down
// and constrain every user of <cuwrap/core.hpp>.
//
// cuda::std::mdspan needs CCCL's <cuda/std/mdspan>: CUDA 12.x toolkits ship it in
// <cuda>/include, CUDA 13 in <cuda>/include/cccl (nvcc finds it by itself; the cuwrap::cuwrap
// CMake target of a build tree adds it for host compilers).
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/detail/buffer_view.hpp>

#if __has_include(<cuda/std/mdspan>)
#include <cuda/std/mdspan>
#define CUWRAP_HAS_CUDA_MDSPAN 1
#else
#define CUWRAP_HAS_CUDA_MDSPAN 0
#endif

#if __has_include(<mdspan>)
#include <mdspan>
#endif
#include <version>
#if defined(__cpp_lib_mdspan)
#define CUWRAP_HAS_STD_MDSPAN 1
#else
#define CUWRAP_HAS_STD_MDSPAN 0
#endif

#if !CUWRAP_HAS_CUDA_MDSPAN && !CUWRAP_HAS_STD_MDSPAN
#error \
    "<cuwrap/mdspan.hpp> needs CCCL's <cuda/std/mdspan> (CUDA 12.x: <cuda>/include; CUDA 13: <cuda>/include/cccl, which nvcc adds itself) or a standard library with std::mdspan"
#endif

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace cuwrap {

namespace detail {

/// An integer that may be a view's extent (bool is not).
template <class Index>
concept ViewExtent = std::is_integral_v<Index> && !std::is_same_v<Index, bool>;

/// Check `extents` (any integers) for a view whose index type is IndexType.
template <class IndexType, class... Index>
void check_integer_extents(const char* caller, Index... extents) {
  std::array<std::uint64_t, sizeof...(Index) + 1> values{};  // +1: rank 0 has no extents
  [[maybe_unused]] std::size_t position = 0;                 // unused for rank 0
  (
      [&](auto extent) {
        if constexpr (std::is_signed_v<decltype(extent)>) {
          if (extent < 0) {
            throw_negative_extent(position, static_cast<std::int64_t>(extent), caller);
          }
        }
        values[position++] = static_cast<std::uint64_t>(extent);
      }(extents),
      ...);
  check_view_extents(values.data(), sizeof...(Index),
                     static_cast<std::uint64_t>(std::numeric_limits<IndexType>::max()), caller);
}

/// Check `buffer` against `mapping` and return the view of its memory.
template <class Mdspan, class Mapping>
Mdspan make_view(BufferRef buffer, const Mapping& mapping, const char* caller) {
  using Element = typename Mdspan::element_type;
  void* address = view_address(buffer, static_cast<std::size_t>(mapping.required_span_size()),
                               sizeof(Element), alignof(Element), caller);
  return Mdspan(static_cast<Element*>(address), mapping);
}

/// Whether `Mapping` is a layout mapping (has the members mdspan needs of one).
template <class Mapping>
concept LayoutMapping = requires(const Mapping& m) {
  typename Mapping::extents_type;
  typename Mapping::layout_type;
  m.required_span_size();
};

}  // namespace detail

#if CUWRAP_HAS_CUDA_MDSPAN
/// View `buffer` as a cuda::std::mdspan of `T` with the given extents (std::size_t
/// indices) and `Layout` (row-major, cuda::std::layout_right, unless given).
///
/// The view points at the buffer's memory and does not own it: keep the buffer open
/// while it is used. Device memory is for device code (pass the view to a kernel);
/// index it on the host only when the buffer is_host_accessible().
///
/// Throws std::invalid_argument for a negative extent, extents whose elements need more
/// bytes than the buffer has (naming both sizes), or a buffer address not aligned for
/// `T` (a slice at an odd offset); std::logic_error for a closed buffer.
///
/// Example:
/// \code
///   cuwrap::Buffer buf = device.allocate(rows * cols * sizeof(float), stream);
///   auto matrix = cuwrap::view<float>(buf, rows, cols);   // matrix(i, j) in a kernel
/// \endcode
template <class T, class Layout = cuda::std::layout_right, detail::ViewExtent... Index>
cuda::std::mdspan<T, cuda::std::dextents<std::size_t, sizeof...(Index)>, Layout> view(
    BufferRef buffer, Index... extents) {
  static_assert(!std::is_same_v<Layout, cuda::std::layout_stride>,
                "cuwrap::view: a layout_stride view needs its strides: pass "
                "cuda::std::layout_stride::mapping(extents, strides)");
  using Extents = cuda::std::dextents<std::size_t, sizeof...(Index)>;
  detail::check_integer_extents<std::size_t>("cuwrap::view", extents...);
  using Mapping = typename Layout::template mapping<Extents>;
  return detail::make_view<cuda::std::mdspan<T, Extents, Layout>>(
      buffer, Mapping(Extents(static_cast<std::size_t>(extents)...)), "cuwrap::view");
}

/// View `buffer` as a cuda::std::mdspan of `T` with `extents` (static or dynamic, in any
/// index type), checked as the integer form is.
template <class T, class Layout = cuda::std::layout_right, class IndexType, std::size_t... Extents>
cuda::std::mdspan<T, cuda::std::extents<IndexType, Extents...>, Layout> view(
    BufferRef buffer, const cuda::std::extents<IndexType, Extents...>& extents) {
  using ExtentsType = cuda::std::extents<IndexType, Extents...>;
  return detail::make_view<cuda::std::mdspan<T, ExtentsType, Layout>>(
      buffer, typename Layout::template mapping<ExtentsType>(extents), "cuwrap::view");
}

/// View `buffer` as a cuda::std::mdspan of `T` through a layout mapping (any layout,
/// e.g. cuda::std::layout_stride): the buffer must hold mapping.required_span_size()
/// elements.
template <class T, detail::LayoutMapping Mapping>
cuda::std::mdspan<T, typename Mapping::extents_type, typename Mapping::layout_type> view(
    BufferRef buffer, const Mapping& mapping) {
  return detail::make_view<
      cuda::std::mdspan<T, typename Mapping::extents_type, typename Mapping::layout_type>>(
      buffer, mapping, "cuwrap::view");
}
#endif  // CUWRAP_HAS_CUDA_MDSPAN

#if CUWRAP_HAS_STD_MDSPAN
/// View `buffer` as a std::mdspan of `T`: as view(), with the standard library's types.
template <class T, class Layout = std::layout_right, detail::ViewExtent... Index>
std::mdspan<T, std::dextents<std::size_t, sizeof...(Index)>, Layout> std_view(BufferRef buffer,
                                                                              Index... extents) {
  static_assert(!std::is_same_v<Layout, std::layout_stride>,
                "cuwrap::std_view: a layout_stride view needs its strides: pass "
                "std::layout_stride::mapping(extents, strides)");
  using Extents = std::dextents<std::size_t, sizeof...(Index)>;
  detail::check_integer_extents<std::size_t>("cuwrap::std_view", extents...);
  using Mapping = typename Layout::template mapping<Extents>;
  return detail::make_view<std::mdspan<T, Extents, Layout>>(
      buffer, Mapping(Extents(static_cast<std::size_t>(extents)...)), "cuwrap::std_view");
}

/// View `buffer` as a std::mdspan of `T` with `extents`, as view() does.
template <class T, class Layout = std::layout_right, class IndexType, std::size_t... Extents>
std::mdspan<T, std::extents<IndexType, Extents...>, Layout> std_view(
    BufferRef buffer, const std::extents<IndexType, Extents...>& extents) {
  using ExtentsType = std::extents<IndexType, Extents...>;
  return detail::make_view<std::mdspan<T, ExtentsType, Layout>>(
      buffer, typename Layout::template mapping<ExtentsType>(extents), "cuwrap::std_view");
}

/// View `buffer` as a std::mdspan of `T` through a layout mapping, as view() does.
template <class T, detail::LayoutMapping Mapping>
std::mdspan<T, typename Mapping::extents_type, typename Mapping::layout_type> std_view(
    BufferRef buffer, const Mapping& mapping) {
  return detail::make_view<
      std::mdspan<T, typename Mapping::extents_type, typename Mapping::layout_type>>(
      buffer, mapping, "cuwrap::std_view");
}
#endif  // CUWRAP_HAS_STD_MDSPAN

}  // namespace cuwrap
