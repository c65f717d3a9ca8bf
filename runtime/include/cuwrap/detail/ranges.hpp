// The range concepts the public headers constrain their templates with, in terms of
// <span> alone (std::span's deduction guide, and std::begin, std::end and std::size,
// which <span> declares too): neither <ranges> (about half the include-cost baseline in
// every translation unit) nor <iterator> (a seventh); see docs/performance.md, "Compile
// time of the headers".
#pragma once

#include <span>
#include <type_traits>
#include <utility>

namespace cuwrap::detail {

/// A range std::span can view: contiguous and sized (std::ranges::contiguous_range and
/// sized_range; a C array and std::array included).
template <class R>
concept contiguous_range = requires(R& r) {
  std::span(r);
};

/// The std::span that views a contiguous_range `R` (its element type const where the
/// range's elements are).
template <contiguous_range R>
using span_of_t = decltype(std::span(std::declval<R&>()));

/// The value type of a contiguous_range's elements (std::ranges::range_value_t).
template <contiguous_range R>
using range_value_t = std::remove_cv_t<typename span_of_t<R>::element_type>;

/// Return a std::span of dynamic extent over `r` (a static extent, as std::span's
/// deduction gives a C array, std::array or a fixed-size span, would pick a range
/// template again where the span form is meant).
template <contiguous_range R>
std::span<typename span_of_t<R>::element_type> dynamic_span(R& r) noexcept {
  const span_of_t<R> view(r);
  return {view.data(), view.size()};
}

namespace range_access {
using std::begin;
using std::end;
using std::size;

/// A range a range-based for loop reads (std::ranges::input_range): begin and end,
/// found as the loop finds them, compare, and the iterator reads and advances.
template <class R>
concept input_range = requires(R& r) {
  begin(r) != end(r);
  *begin(r);
  ++std::declval<decltype(begin(r))&>();
};

/// The type of a range's elements as its iterator gives them (std::ranges::range_reference_t).
template <input_range R>
using reference_t = decltype(*begin(std::declval<R&>()));

/// A range that knows its size (std::ranges::sized_range): size(r) as for an array or a
/// container.
template <class R>
concept sized_range = requires(R& r) {
  size(r);
};

/// Return `r`'s size.
template <sized_range R>
auto range_size(R& r) {
  return size(r);
}
}  // namespace range_access

using range_access::input_range;
using range_access::range_size;
using range_access::sized_range;
/// The type of a range's elements as its iterator gives them.
template <input_range R>
using range_reference_t = range_access::reference_t<R>;

}  // namespace cuwrap::detail
