// Stage 5: plan → coverage report. See report.hpp.
#include "report.hpp"

#include <algorithm>
#include <map>

namespace cuwrap::gen {
namespace {

// The second form: what it takes and returns. Its shape becomes the function's shape
// (the most typed form); `outputs` lists everything it returns or supplies itself.
void second_form_json(const FunctionPlan& plan, nlohmann::json& j) {
  const SecondForm& form = *plan.second;
  nlohmann::json inputs = nlohmann::json::array();
  nlohmann::json outputs = nlohmann::json::array();
  for (std::size_t i = 0; i < form.params.size(); ++i) {
    const Param& p = plan.function.params[i];
    const FormParam& fp = form.params[i];
    const nlohmann::json entry = {{"name", p.name},
                                  {"role", form_role_name(fp.role)},
                                  {"type", fp.element.empty() ? p.type : fp.element}};
    const bool taken = fp.role == FormRole::Input || fp.role == FormRole::InOut ||
                       fp.role == FormRole::Span || fp.role == FormRole::Key ||
                       (fp.role == FormRole::KeyedValue && form.setter) ||
                       (fp.role == FormRole::VectorCount && form.sizing == Sizing::Requested);
    const bool given = fp.role != FormRole::Input && fp.role != FormRole::Span &&
                       fp.role != FormRole::Key &&
                       !(fp.role == FormRole::KeyedValue && form.setter);
    if (taken) {
      inputs.push_back(entry);
    }
    if (given) {
      outputs.push_back(entry);
    }
  }
  j["first_shape"] = j["shape"];
  j["shape"] = form.shape;
  j["second_form"] = {
      {"shape", form.shape}, {"rule", form.why}, {"inputs", inputs}, {"outputs", outputs}};
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
  nlohmann::json params = nlohmann::json::array();
  for (const auto& p : f.params) {
    params.push_back({{"name", p.name}, {"type", p.type}});
  }
  nlohmann::json j = {
      {"name", f.name},
      {"params", params},
      {"variadic", f.variadic},
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
      {"typed", plan.shape != Shape::RawOnly && plan.shape != Shape::PassThrough},
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
  if (!f.abi_source.empty()) {
    j["abi_source"] = f.abi_source;
  }
  if (plan.second) {
    second_form_json(plan, j);
  }
  if (!plan.to_review.empty()) {
    nlohmann::json decisions = nlohmann::json::array();
    for (const auto& d : plan.to_review) {
      decisions.push_back({{"param", d.param}, {"rule", d.rule}});
    }
    j["to_review"] = decisions;
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
      (f.shape == Shape::RawOnly       ? c.raw_only
       : f.shape == Shape::PassThrough ? c.pass_through
                                       : c.typed) += 1;
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
        << " with a typed form, " << c.pass_through << " pass-through, " << c.raw_only
        << " raw-only\n";
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
    const auto review =
        std::count_if(plan.libraries[i].functions.begin(), plan.libraries[i].functions.end(),
                      [](const FunctionPlan& f) { return !f.to_review.empty(); });
    if (review != 0) {
      out << "  to review: " << review
          << " functions classified from their documentation (the JSON report's to_review)\n";
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
      enums.push_back(
          {{"name", e.name}, {"cases", e.cases.size()}, {"enumerators", e.enumerators}});
    }
    nlohmann::json owning = nlohmann::json::array();
    for (const auto& o : library.owning) {
      owning.push_back({{"handle", o.handle}, {"destroy", o.destroy}, {"created_by", o.creators}});
    }
    headers.push_back({{"header", counts[i].header},
                       {"namespace", "cuwrap::" + library.config.ns},
                       {"declared", counts[i].declared},
                       {"typed", counts[i].typed},
                       {"pass_through", counts[i].pass_through},
                       {"raw_only", counts[i].raw_only},
                       {"functions", functions},
                       {"enums", enums},
                       {"enums_without_to_string", library.skipped_enums},
                       {"owning_handles", owning}});
  }
  nlohmann::json unknown = nlohmann::json::array();
  nlohmann::json review = nlohmann::json::array();
  for (const auto& library : plan.libraries) {
    for (const auto& f : library.functions) {
      if (f.function.abi_version_unknown) {
        unknown.push_back(f.function.name);
      }
      if (!f.to_review.empty()) {
        nlohmann::json decisions = nlohmann::json::array();
        for (const auto& d : f.to_review) {
          decisions.push_back({{"param", d.param}, {"rule", d.rule}});
        }
        review.push_back({{"header", library.config.header},
                          {"name", f.function.name},
                          {"decisions", decisions}});
      }
    }
  }
  nlohmann::json lists = nlohmann::json::array();
  for (const auto& list : plan.attribute_lists) {
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& e : list.entries) {
      entries.push_back({{"enumerator", e.enumerator}, {"type", e.type}});
    }
    lists.push_back({{"file", list.file}, {"enum", list.enum_name}, {"entries", entries}});
  }
  return {{"format_version", kReportFormatVersion},
          {"cuda_version", plan.cuda_version},
          {"abi_versions_from", abi_source_name(plan.abi_source)},
          {"abi_version_unknown", unknown},
          {"to_review", review},
          {"attribute_lists", lists},
          {"headers", headers}};
}

namespace {

// `name: type, ...` of a report's parameter list; with `roles`, each entry's role.
std::string param_list(const nlohmann::json& params, bool roles) {
  std::string out;
  for (const auto& p : params) {
    out += out.empty() ? "" : ", ";
    out += p.value("name", std::string()) + ": ";
    if (roles) {
      out += p.value("role", std::string()) + " ";
    }
    out += p.value("type", std::string());
  }
  return out;
}

}  // namespace

std::string classification_line(const nlohmann::json& f) {
  const std::string shape = f.value("first_shape", f.value("shape", std::string()));
  if (shape == "raw-only") {
    return "raw-only (" + f.value("raw_only_reason", std::string()) + ")";
  }
  std::string line = shape + " in(" + param_list(f["inputs"], false) + ") out(" +
                     param_list(f["outputs"], false) + ")";
  if (f.contains("second_form")) {
    const auto& s = f["second_form"];
    line += "; second " + s.value("shape", std::string()) + " in(" + param_list(s["inputs"], true) +
            ") out(" + param_list(s["outputs"], true) + ")";
  }
  return line;
}

std::string classification_text(const nlohmann::json& report) {
  std::string out =
      "# Classification of every function by cuwrap-gen (report format " +
      std::to_string(report.value("format_version", 0)) + "), CUDA_VERSION " +
      std::to_string(report.value("cuda_version", 0)) +
      ":\n# <header> <function>: <shape> in(<inputs>) out(<outputs>)[; second <shape> "
      "in(...) out(...)].\n# Written by cuwrap-gen --classification FILE; never edit it by "
      "hand.\n";
  for (const auto& h : report["headers"]) {
    for (const auto& f : h["functions"]) {
      out += h.value("header", std::string()) + " " + f.value("name", std::string()) + ": " +
             classification_line(f) + "\n";
    }
  }
  return out;
}

}  // namespace cuwrap::gen
