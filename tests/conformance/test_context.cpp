// Port of cuda.core's tests/test_context.py (see README.md).
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include <type_traits>

namespace {

// cuda.core refuses Context(): a context comes from a device. cuwrap's Context has no
// public constructor but the move.
TEST(test_context, test_context_init_disabled) {
  EXPECT_FALSE(std::is_default_constructible_v<cuwrap::Context>);
  EXPECT_FALSE((std::is_constructible_v<cuwrap::Context, CUcontext>));
  EXPECT_FALSE(std::is_copy_constructible_v<cuwrap::Context>);
}

}  // namespace
