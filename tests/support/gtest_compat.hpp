// GoogleTest compatibility: the suites build with GoogleTest 1.11 (Ubuntu 22.04) and newer.
//
// 1.12 added GTEST_FLAG_SET/GTEST_FLAG_GET; 1.11 only has the GTEST_FLAG(name) variable,
// which later versions still define for builds without Abseil flags (Debian's and
// Ubuntu's packages). Tests set flags through CUWRAP_GTEST_FLAG_SET only.
#pragma once

#include <gtest/gtest.h>

#if defined(GTEST_FLAG_SET)
#define CUWRAP_GTEST_FLAG_SET(name, value) GTEST_FLAG_SET(name, value)
#else
#define CUWRAP_GTEST_FLAG_SET(name, value) (void)(::testing::GTEST_FLAG(name) = (value))
#endif
