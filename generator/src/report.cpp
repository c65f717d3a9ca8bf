// Stage 5: plan → coverage report. See report.hpp.
#include "report.hpp"

namespace cuwrap::gen {
namespace {

nlohmann::json function_json(const FunctionPlan& plan) {
  const Function& f = plan.function;
  nlohmann::json inputs = nlohmann::json::array();
  nlohmann::json outputs = nlohmann::json::array();
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    const Param& p = f.params[i];
    switch (plan.roles[i]) {
      case ParamRole::Input:
        inputs.push_back({{"name", p.name}, {"type", p.type}});
        break;
      case ParamRole::Output:
        outputs.push_back({{"name", p.name}, {"type", p.pointee}});
        break;
      case ParamRole::StringBuffer:
        outputs.push_back({{"name", p.name}, {"type", "std::string"}});
        break;
      case ParamRole::StringLength:
        break;  // supplied by the wrapper
    }
  }
  nlohmann::json j = {
      {"name", f.name},
      {"symbol", f.symbol},
      {"abi_version", f.abi_version},
      {"per_thread_abi_version", f.per_thread_abi_version},
      {"proc_name", f.proc_name.empty() ? f.name : f.proc_name},
      {"per_thread_symbol",
       f.per_thread_symbol.empty() ? nlohmann::json() : nlohmann::json(f.per_thread_symbol)},
      {"header", f.header},
      {"index", plan.index},
      {"return_type", f.return_type},
      {"inputs", inputs},
      {"outputs", outputs},
      {"shape", shape_name(plan.shape)},
      {"typed", plan.shape != Shape::RawOnly},
      {"raw_only_reason",
       plan.raw_only_reason.empty() ? nlohmann::json() : nlohmann::json(plan.raw_only_reason)},
  };
  if (!plan.answer_status.empty()) {
    j["answer_status"] = plan.answer_status;
  }
  if (!plan.log_handle.empty()) {
    j["log_handle"] = plan.log_handle;
  }
  if (plan.one_call) {
    j["one_call"] = {{"size_function", plan.one_call->size_function},
                     {"returns", plan.one_call->text ? "std::string" : "std::vector<char>"}};
  }
  if (f.deprecated) {
    j["deprecated"] = true;
  }
  return j;
}

}  // namespace

std::vector<Coverage> coverage(const Plan& plan) {
  std::vector<Coverage> out;
  for (const auto& library : plan.libraries) {
    Coverage c;
    c.header = library.config.header;
    c.declared = library.functions.size();
    for (const auto& f : library.functions) {
      (f.shape == Shape::RawOnly ? c.raw_only : c.typed) += 1;
    }
    out.push_back(c);
  }
  return out;
}

void print_report(const Plan& plan, std::ostream& out) {
  const auto counts = coverage(plan);
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const Coverage& c = counts[i];
    out << c.header << ": " << c.declared << " functions declared, " << c.typed << "/" << c.declared
        << " with a typed form, " << c.raw_only << " raw-only\n";
    for (const auto& f : plan.libraries[i].functions) {
      if (f.shape == Shape::RawOnly) {
        out << "  raw-only: " << f.function.name << " (" << f.raw_only_reason << ")\n";
      }
    }
    for (const auto& e : plan.libraries[i].skipped_enums) {
      out << "  no to_string: " << e << "\n";
    }
  }
}

nlohmann::json report_json(const Plan& plan) {
  nlohmann::json headers = nlohmann::json::array();
  const auto counts = coverage(plan);
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const LibraryPlan& library = plan.libraries[i];
    nlohmann::json functions = nlohmann::json::array();
    for (const auto& f : library.functions) {
      functions.push_back(function_json(f));
    }
    nlohmann::json enums = nlohmann::json::array();
    for (const auto& e : library.enums) {
      enums.push_back({{"name", e.name}, {"cases", e.cases.size()}});
    }
    headers.push_back({{"header", counts[i].header},
                       {"namespace", "cuwrap::" + library.config.ns},
                       {"declared", counts[i].declared},
                       {"typed", counts[i].typed},
                       {"raw_only", counts[i].raw_only},
                       {"functions", functions},
                       {"enums", enums},
                       {"enums_without_to_string", library.skipped_enums}});
  }
  return {{"cuda_version", plan.cuda_version}, {"headers", headers}};
}

}  // namespace cuwrap::gen
