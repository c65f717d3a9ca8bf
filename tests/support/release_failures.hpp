// Test support: record the release failures reported while an object is alive.
#pragma once

#include <cuwrap/error.hpp>

#include <utility>
#include <vector>

namespace cuwrap::testing {

/// Collects release failures while alive, then restores the previous handler.
class ReleaseFailures {
 public:
  ReleaseFailures()
      : previous_(cuwrap::set_release_failure_handler(
            {[](const cuwrap::ReleaseFailure& failure, void* self) {
               static_cast<ReleaseFailures*>(self)->reports.push_back(failure);
             },
             this})) {}
  ReleaseFailures(const ReleaseFailures&) = delete;
  ReleaseFailures& operator=(const ReleaseFailures&) = delete;
  ~ReleaseFailures() { cuwrap::set_release_failure_handler(previous_); }

  std::vector<cuwrap::ReleaseFailure> reports;  ///< in the order reported

 private:
  cuwrap::ReleaseFailureHandler previous_;
};

}  // namespace cuwrap::testing
