// Hand-built API models for the rules/render/report tests (no libclang involved).
#pragma once

#include "model.hpp"
#include "rules.hpp"

#include <string>
#include <utility>
#include <vector>

namespace cuwrap::gen::testing {

/// A by-value parameter, e.g. value("size_t", "bytesize").
inline Param value(std::string type, std::string name, std::string doc = {}) {
  Param p;
  p.type = std::move(type);
  p.name = std::move(name);
  p.doc = std::move(doc);
  return p;
}

/// A `pointee*` parameter (`const pointee*` when `is_const`).
inline Param pointer(const std::string& pointee, std::string name, std::string doc = {},
                     bool is_const = false, bool complete = true) {
  Param p;
  p.type = (is_const ? "const " : "") + pointee + "*";
  p.name = std::move(name);
  p.is_pointer = true;
  p.pointee = pointee;
  p.pointee_const = is_const;
  p.pointee_complete = complete;
  p.doc = std::move(doc);
  return p;
}

/// The same parameter with a `[out]`-style direction marker.
inline Param marked(Param p, std::string direction) {
  p.direction = std::move(direction);
  return p;
}

/// A function of `header` returning `return_type`.
inline Function function(std::string name, std::vector<Param> params,
                         std::string return_type = "CUresult", std::string header = "cuda.h") {
  Function f;
  f.symbol = name;
  f.name = std::move(name);
  f.params = std::move(params);
  f.return_type = std::move(return_type);
  f.header = std::move(header);
  f.brief = "Do " + f.name + ".";
  return f;
}

/// The configuration of the library wrapping `header`.
inline const LibraryConfig& config_of(const std::string& header) {
  for (const auto& c : library_configs()) {
    if (c.header == header) {
      return c;
    }
  }
  return library_configs().front();
}

/// Plan `f` with its header's configuration.
inline FunctionPlan plan(const Function& f) { return plan_function(f, config_of(f.header)); }

}  // namespace cuwrap::gen::testing
