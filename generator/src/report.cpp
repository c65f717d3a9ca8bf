// Stage 5: plan → coverage report. See report.hpp.
#include "report.hpp"

#include <map>

namespace cuwrap::gen {
namespace {

const char* role_name(FormRole role) {
  switch (role) {
    case FormRole::Input:
      return "input";
    case FormRole::Output:
      return "output";
    case FormRole::InOut:
      return "in-out";
    case FormRole::Vector:
      return "vector";
    case FormRole::VectorCount:
      return "vector size";
    case FormRole::Fixed:
      return "array";
    case FormRole::Span:
      return "span";
    case FormRole::SpanCount:
      return "span size";
    case FormRole::Key:
      return "template key";
    case FormRole::KeyedValue:
      return "keyed value";
    case FormRole::KeyedSize:
      return "sizeof value";
  }
  return "unknown";
}

// The second form: what it takes and returns. Its shape becomes the function's shape
// (the most typed form); `outputs` lists everything it returns or supplies itself.
void second_form_json(const FunctionPlan& plan, nlohmann::json& j) {
  const SecondForm& form = *plan.second;
  nlohmann::json inputs = nlohmann::json::array();
  nlohmann::json outputs = nlohmann::json::array();
  for (std::size_t i = 0; i < form.params.size(); ++i) {
    const Param& p = plan.function.params[i];
    const FormParam& fp = form.params[i];
    const nlohmann::json entry = {
        {"name", p.name}, {"role", role_name(fp.role)}, {"type", fp.element}};
    const bool taken = fp.role == FormRole::Input || fp.role == FormRole::InOut ||
                       fp.role == FormRole::Span || fp.role == FormRole::Key ||
                       (fp.role == FormRole::KeyedValue && form.setter) ||
                       (fp.role == FormRole::VectorCount && form.sizing == Sizing::Requested);
    const bool given = fp.role != FormRole::Input && fp.role != FormRole::Span &&
                       fp.role != FormRole::Key && !(fp.role == FormRole::KeyedValue && form.setter);
    if (taken) {
      inputs.push_back(entry);
    }
    if (given) {
      outputs.push_back(entry);
    }
  }
  j["first_shape"] = j["shape"];
  j["shape"] = form.shape;
  j["second_form"] = {{"shape", form.shape}, {"rule", form.why}, {"inputs", inputs},
                      {"outputs", outputs}};
  if (!form.count_function.empty()) {
    j["second_form"]["count_function"] = form.count_function;
  }
  if (form.key) {
    nlohmann::json types = nlohmann::json::object();
    for (const auto& [k, t] : form.key->types) {
      types[k] = t;
    }
    j["second_form"]["value_types"] = types;
  }
}

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
  if (f.abi_version_unknown) {
    j["abi_version_unknown"] = true;
  }
  if (plan.second) {
    second_form_json(plan, j);
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
    std::map<std::string, int> shapes;  // by the most typed form of each function
    for (const auto& f : plan.libraries[i].functions) {
      shapes[f.second ? f.second->shape : std::string(shape_name(f.shape))] += 1;
    }
    out << "  shapes:";
    for (const auto& [shape, n] : shapes) {
      out << " " << shape << " " << n << ";";
    }
    out << "\n";
    for (const auto& f : plan.libraries[i].functions) {
      if (f.shape == Shape::RawOnly) {
        out << "  raw-only: " << f.function.name << " (" << f.raw_only_reason << ")\n";
      }
    }
    for (const auto& e : plan.libraries[i].skipped_enums) {
      out << "  no to_string: " << e << "\n";
    }
    if (c.header == "cuda.h" && plan.abi_source == AbiSource::Defines) {
      out << "  ABI versions from cuda.h's versioned names (--abi-from-defines), not "
             "cudaTypedefs.h\n";
    }
    for (const auto& f : plan.libraries[i].functions) {
      if (f.function.abi_version_unknown) {
        out << "  ABI version unknown: " << f.function.name << " (requested as CUDA_VERSION "
            << plan.cuda_version << ")\n";
      }
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
  nlohmann::json unknown = nlohmann::json::array();
  for (const auto& library : plan.libraries) {
    for (const auto& f : library.functions) {
      if (f.function.abi_version_unknown) {
        unknown.push_back(f.function.name);
      }
    }
  }
  return {{"cuda_version", plan.cuda_version},
          {"abi_versions_from", abi_source_name(plan.abi_source)},
          {"abi_version_unknown", unknown},
          {"headers", headers}};
}

}  // namespace cuwrap::gen
