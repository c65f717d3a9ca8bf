// Stage 3: plan → text. See render.hpp.
//
// This file only fills ctemplate dictionaries from the plan; the text of every
// generated file is in templates/*.tpl.
#include "render.hpp"

#include "interposer.hpp"

#include <ctemplate/template.h>
#include <ctemplate/template_modifiers.h>

#include <algorithm>

namespace cuwrap::gen {
namespace {

using Dict = ctemplate::TemplateDictionary;

// `{{VAR:x-cpp-string}}`: escape text for a C++ string literal.
class CppStringModifier : public ctemplate::TemplateModifier {
  void Modify(const char* in, size_t length, const ctemplate::PerExpandData* /*data*/,
              ctemplate::ExpandEmitter* out, const std::string& /*arg*/) const override {
    for (size_t i = 0; i < length; ++i) {
      if (in[i] == '"' || in[i] == '\\') {
        out->Emit('\\');
      }
      out->Emit(in[i]);
    }
  }
};

void register_modifiers() {
  static const bool kRegistered = [] {
    static CppStringModifier cpp_string;
    return ctemplate::AddModifier("x-cpp-string", &cpp_string);
  }();
  static_cast<void>(kRegistered);
}

std::string expand(const std::filesystem::path& template_dir, const char* name, const Dict& dict) {
  const std::filesystem::path path = template_dir / name;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw RenderFailure("template not found: " + path.string());
  }
  std::string out;
  if (!ctemplate::ExpandTemplate(path.string(), ctemplate::STRIP_BLANK_LINES, &dict, &out)) {
    throw RenderFailure("template does not expand: " + path.string());
  }
  return out;
}

// Every wrapper gets a summary line, even where the header documents none.
std::string brief_of(const Function& f) {
  return f.brief.empty() ? "Call " + f.name + "." : f.brief;
}

void fill_params(Dict& parent, const char* section, const std::vector<Param>& params,
                 std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    Dict* d = parent.AddSectionDictionary(section);
    d->SetValue("DECL", declare(params[i].type, params[i].name));
    d->SetValue("NAME", params[i].name);
  }
}

// The typed form's dictionary: its result, inputs and call arguments.
void fill_typed(Dict& typed, const FunctionPlan& plan) {
  const Function& f = plan.function;
  const auto outputs = plan.outputs();
  std::string buffer;  // Shape::String: the std::string the C function writes into
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    const Param& p = f.params[i];
    Dict* arg = typed.AddSectionDictionary("ARG");
    arg->SetValue("NAME", p.name);
    arg->SetValue("TYPE", p.type);
    switch (plan.roles[i]) {
      case ParamRole::Input: {
        arg->ShowSection("AS_IN");
        Dict* in = typed.AddSectionDictionary("INPUT");
        in->SetValue("DECL", declare(p.type, p.name));
        in->SetValue("NAME", p.name);
        break;
      }
      case ParamRole::Output:
        arg->ShowSection(plan.shape == Shape::Aggregate ? "AS_MEMBER" : "AS_OUT");
        break;
      case ParamRole::StringBuffer:
        arg->ShowSection("AS_BUFFER");
        buffer = p.name;
        break;
      case ParamRole::StringLength:
        arg->ShowSection("AS_LENGTH");
        arg->SetValue("BUFFER", buffer);
        break;
    }
  }
  switch (plan.shape) {
    case Shape::Void:
      typed.SetValue("RESULT_TYPE", "void");
      break;
    case Shape::Value: {
      const Param& out = f.params[outputs.front()];
      typed.SetValue("RESULT_TYPE", out.pointee);
      Dict* value = typed.AddSectionDictionary("VALUE");
      value->SetValue("TYPE", out.pointee);
      value->SetValue("OUTPUT", out.name);
      break;
    }
    case Shape::Aggregate: {
      typed.SetValue("RESULT_TYPE", f.name + "_result");
      typed.SetValue("LOCAL", plan.result_local);
      Dict* aggregate = typed.AddSectionDictionary("AGGREGATE");
      for (std::size_t i : outputs) {
        Dict* member = aggregate->AddSectionDictionary("MEMBER");
        member->SetValue("TYPE", f.params[i].pointee);
        member->SetValue("NAME", f.params[i].name);
      }
      break;
    }
    case Shape::Answer:
      typed.SetValue("RESULT_TYPE", "bool");
      typed.AddSectionDictionary("ANSWER")->SetValue("STATUS", plan.answer_status);
      break;
    case Shape::String: {
      typed.SetValue("RESULT_TYPE", "std::string");
      Dict* string = typed.AddSectionDictionary("STRING");
      string->SetValue("BUFFER", buffer);
      string->SetValue("LENGTH", std::to_string(plan.string_length));
      break;
    }
    case Shape::PassThrough:
      typed.SetValue("RESULT_TYPE", f.return_type);
      typed.ShowSection("PASS_THROUGH");
      break;
    case Shape::RawOnly:
      break;
  }
  if (plan.shape == Shape::Void || plan.shape == Shape::Value || plan.shape == Shape::Aggregate ||
      plan.shape == Shape::String) {
    typed.ShowSection("CHECKED");
  }
  if (!plan.log_handle.empty()) {
    typed.AddSectionDictionary("LOG")->SetValue("HANDLE", plan.log_handle);
  }
}

void fill_function(Dict& lib, const LibraryPlan& library, const FunctionPlan& plan) {
  const Function& f = plan.function;
  Dict* d = lib.AddSectionDictionary("FUNCTION");
  d->SetValue("NAME", f.name);
  d->SetValue("BRIEF", brief_of(f));
  d->SetValue("RETURN_TYPE", f.return_type);
  d->SetValue("FN", plan.entry_local);
  // A header-inline forwarder is loaded as the function it forwards to.
  d->SetValue("ENTRY", f.inline_forwarder ? f.symbol : f.name);
  d->SetIntValue("INDEX", static_cast<long>(plan.index));
  if (library.config.per_thread && !f.per_thread_symbol.empty()) {
    d->ShowSection("PER_THREAD");
  }
  if (f.deprecated) {
    d->ShowSection("DEPRECATED");
  }
  if (f.variadic) {
    d->ShowSection("VARIADIC");  // the raw form forwards `...` as a parameter pack
  }
  fill_params(*d, "PARAM", f.params, f.params.size());
  if (f.return_type != "void") {
    d->AddSectionDictionary("LOAD_FAILURE")
        ->SetValue("VALUE", plan.returns_status ? library.config.load_failure : std::string("{}"));
  }
  if (plan.shape == Shape::RawOnly) {
    d->AddSectionDictionary("RAW_ONLY")->SetValue("REASON", plan.raw_only_reason);
    return;
  }
  fill_typed(*d->AddSectionDictionary("TYPED"), plan);
  if (plan.one_call) {
    Dict* one = d->AddSectionDictionary("ONE_CALL");
    one->SetValue("SIZE_FUNCTION", plan.one_call->size_function);
    one->ShowSection(plan.one_call->text ? "TEXT" : "BINARY");
    one->SetValue("BUFFER", f.params.back().name);
    fill_params(*one, "INPUT", f.params, f.params.size() - 1);
  }
}

void fill_common(Dict& d, const Plan& plan, const LibraryPlan& library) {
  const LibraryConfig& c = library.config;
  d.SetValue("HEADER", c.header);
  d.SetIntValue("CUDA_VERSION", plan.cuda_version);
  d.SetValue("NS", c.ns);
  d.SetValue("TABLE", c.table);
  d.SetValue("SLOTS", c.slots);
  d.SetValue("LIBRARY", c.library);
  for (const auto& e : library.enums) {
    Dict* ed = d.AddSectionDictionary("ENUM");
    ed->SetValue("NAME", e.name);
    ed->SetValue("FIRST", e.cases.empty() ? std::string() : e.cases.front().name);
    for (const auto& k : e.cases) {
      ed->AddSectionDictionary("CASE")->SetValue("NAME", k.name);
    }
    if (e.is_status) {
      Dict* status = d.AddSectionDictionary("STATUS");
      status->SetValue("TYPE", e.name);
      for (const auto& k : e.cases) {
        Dict* kd = status->AddSectionDictionary("CASE");
        kd->SetValue("NAME", k.name);
        kd->SetValue("DESCRIPTION", k.description);
      }
    }
  }
}

std::string render_header(const std::filesystem::path& dir, const Plan& plan,
                          const LibraryPlan& library) {
  Dict d("library.hpp");
  fill_common(d, plan, library);
  for (const auto& f : library.functions) {
    fill_function(d, library, f);
  }
  return expand(dir, "library.hpp.tpl", d);
}

std::string render_source(const std::filesystem::path& dir, const Plan& plan,
                          const LibraryPlan& library) {
  Dict d("library.cpp");
  fill_common(d, plan, library);
  for (const auto& f : library.functions) {
    Dict* s = d.AddSectionDictionary("SYMBOL");
    s->SetValue("NAME", f.function.name);
    s->SetValue("SYMBOL", f.function.symbol);
    s->SetIntValue("VERSION", f.function.abi_version);
    s->SetIntValue("PTDS_VERSION", f.function.per_thread_abi_version);
    s->SetValue("PROC_NAME", f.function.proc_name.empty()
                                 ? std::string("nullptr")
                                 : "\"" + f.function.proc_name + "\"");
  }
  return expand(dir, "library.cpp.tpl", d);
}

std::string render_symbols(const std::filesystem::path& dir, const Plan& plan) {
  Dict d("symbols.hpp");
  d.SetIntValue("CUDA_VERSION", plan.cuda_version);
  std::string headers;
  for (const auto& library : plan.libraries) {
    headers += (headers.empty() ? "" : ", ") + library.config.header;
    Dict* l = d.AddSectionDictionary("LIBRARY");
    l->SetValue("HEADER", library.config.header);
    l->SetValue("TABLE", library.config.table);
    l->SetValue("SLOTS", library.config.slots);
    l->SetIntValue("COUNT", static_cast<long>(library.functions.size()));
    if (library.config.per_thread) {
      l->ShowSection("PER_THREAD");
    }
  }
  // A library whose header was missing (nvJitLink.h before CUDA 12) keeps an empty
  // table, so the loader compiles unchanged and nothing can call into it.
  for (const auto& config : library_configs()) {
    const bool present =
        std::any_of(plan.libraries.begin(), plan.libraries.end(),
                    [&](const LibraryPlan& l) { return l.config.header == config.header; });
    if (!present) {
      Dict* a = d.AddSectionDictionary("ABSENT");
      a->SetValue("HEADER", config.header);
      a->SetValue("TABLE", config.table);
    }
  }
  d.SetValue("HEADERS", headers);
  return expand(dir, "symbols.hpp.tpl", d);
}

std::string render_attributes(const std::filesystem::path& dir, const Plan& plan,
                              const AttributeList& list) {
  Dict d("attributes.inc");
  d.SetValue("HEADER", "cuda.h");
  d.SetIntValue("CUDA_VERSION", plan.cuda_version);
  d.SetValue("MACRO", list.macro);
  d.SetValue("ENUM", list.enum_name);
  for (const auto& e : list.entries) {
    Dict* ed = d.AddSectionDictionary("ENTRY");
    ed->SetValue("NAME", e.name);
    ed->SetValue("ENUMERATOR", e.enumerator);
  }
  return expand(dir, "attributes.inc.tpl", d);
}

}  // namespace

std::vector<OutputFile> render(const Plan& plan, const std::filesystem::path& template_dir) {
  register_modifiers();
  std::vector<OutputFile> files;
  for (const auto& library : plan.libraries) {
    files.push_back({"include/cuwrap/" + library.config.ns + ".hpp",
                     render_header(template_dir, plan, library)});
  }
  files.push_back({"include/cuwrap/detail/symbols.hpp", render_symbols(template_dir, plan)});
  for (const auto& list : plan.attribute_lists) {
    files.push_back(
        {"include/cuwrap/detail/" + list.file, render_attributes(template_dir, plan, list)});
  }
  for (const auto& library : plan.libraries) {
    files.push_back(
        {"src/" + library.config.ns + ".cpp", render_source(template_dir, plan, library)});
  }
  if (auto interposer = render_interposer(plan, template_dir)) {
    files.push_back(std::move(*interposer));
  }
  return files;
}

}  // namespace cuwrap::gen
