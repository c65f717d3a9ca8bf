// Stage 3: plan → text. See render.hpp.
//
// This file only fills ctemplate dictionaries from the plan; the text of every
// generated file is in templates/*.tpl.
#include "render.hpp"

#include "interposer.hpp"
#include "text.hpp"

#include <ctemplate/template.h>
#include <ctemplate/template_modifiers.h>

#include <algorithm>
#include <cctype>
#include <set>

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

// Where a typed form's body goes: in the header, `inline` (INLINE), or out of line
// (OUT_OF_LINE): declared in the header, its definition kept there for the library's
// generated source (which defines DEFINE_MACRO) and for code that asks for inline
// bodies (CUWRAP_INLINE_BINDINGS: then inline, in the inline namespace inline_bindings).
// Out of line is what keeps <cuwrap/NS.hpp> cheap to include (docs/performance.md); a
// form whose body depends on the including translation unit (the per-thread default
// stream) or that is a template stays inline.
void show_linkage(Dict& form, bool out_of_line) {
  form.ShowSection(out_of_line ? "OUT_OF_LINE" : "INLINE");
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
    const FormParam* jit_param =
        plan.second && plan.second->jit != JitUse::None ? &plan.second->params[i] : nullptr;
    if (jit_param != nullptr && plan.roles[i] == ParamRole::Input &&
        (jit_param->jit != JitRole::None || i == plan.second->jit_count)) {
      // The JIT option pair goes through detail::JitCall (the JIT section).
      Dict* expr = arg->AddSectionDictionary("AS_EXPR");
      expr->SetValue("EXPR", jit_param->jit == JitRole::Options  ? "jit_call.options()"
                             : jit_param->jit == JitRole::Values ? "jit_call.values()"
                                                                 : "jit_call.count()");
      Dict* in = typed.AddSectionDictionary("INPUT");
      in->SetValue("DECL", declare(p.type, p.name));
      in->SetValue("NAME", p.name);
      continue;
    }
    if (plan.roles[i] == ParamRole::Input && p.type == "const char**") {
      // An array of strings the library only reads (nvJitLinkCreate's options): taken as
      // `const char* const*`, so that a const array is accepted as it is.
      arg->AddSectionDictionary("AS_EXPR")->SetValue("EXPR",
                                                     "const_cast<const char**>(" + p.name + ")");
      Dict* in = typed.AddSectionDictionary("INPUT");
      in->SetValue("DECL", "const char* const* " + p.name);
      in->SetValue("NAME", p.name);
      continue;
    }
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
  if (plan.second && plan.second->jit != JitUse::None) {
    const SecondForm& form = *plan.second;
    const std::string& count = f.params[form.jit_count].name;
    typed.AddSectionDictionary("JIT")->SetValue(
        "ARGS", "std::span<const CUjit_option>(" + f.params[form.jit_options].name + ", " + count +
                    "), std::span<void*>(" + f.params[form.jit_values].name + ", " + count + "), " +
                    (form.jit == JitUse::OwnErrorLog ? "true" : "false"));
  }
}

// The spans counted by parameter `count`, the required ones first: the count passed to
// the C function is the first one's length (an optional one may be empty).
std::vector<std::size_t> spans_of(const SecondForm& form, std::size_t count) {
  std::vector<std::size_t> spans;
  for (std::size_t a = 0; a < form.params.size(); ++a) {
    if (form.params[a].role == FormRole::Span && form.params[a].count == count) {
      spans.push_back(a);
    }
  }
  std::stable_partition(spans.begin(), spans.end(),
                        [&](std::size_t a) { return !form.params[a].optional; });
  return spans;
}

// The second typed form (shapes.hpp): its inputs, locals, call arguments and result.
// `query` gives the arguments of an enumeration's counting call (null arrays).
std::string second_arg(const FunctionPlan& plan, std::size_t i, bool query,
                       const std::string& count_local) {
  const SecondForm& form = *plan.second;
  const Param& p = plan.function.params[i];
  const FormParam& fp = form.params[i];
  if (form.jit != JitUse::None) {
    if (fp.jit == JitRole::Options) {
      return "jit_call.options()";
    }
    if (fp.jit == JitRole::Values) {
      return "jit_call.values()";
    }
    if (i == form.jit_count && fp.role == FormRole::SpanCount) {
      return "jit_call.count()";
    }
  }
  switch (fp.role) {
    case FormRole::Input:
      return p.name;
    case FormRole::KeyedValue:
      if (form.import_handle) {
        // The handle's type is the key's: decided where the template is instantiated.
        return "[&]() -> void* { using T = decltype(" + p.name +
               "); if constexpr (std::is_integral_v<T>) { return "
               "reinterpret_cast<void*>(static_cast<std::uintptr_t>(" +
               p.name + ")); } else if constexpr (std::is_pointer_v<T>) { return " + p.name +
               "; } else { return static_cast<void*>(&" + p.name + "); } }()";
      }
      return "&" + p.name;
    case FormRole::Output:
    case FormRole::InOut:
      return "&" + p.name;
    case FormRole::Vector:
      return query ? std::string("nullptr") : p.name + ".data()";
    case FormRole::Fixed:
      return p.name + ".data()";
    case FormRole::Span:
      // An optional array left empty is passed as NULL, as its documentation asks.
      return fp.optional ? "(" + p.name + ".empty() ? nullptr : const_cast<" + p.type + ">(" +
                               p.name + ".data()))"
                         : "const_cast<" + p.type + ">(" + p.name + ".data())";
    case FormRole::SpanCount: {
      const auto spans = spans_of(form, i);
      return spans.empty() ? std::string("0")
                           : "static_cast<" + p.type + ">(" +
                                 plan.function.params[spans.front()].name + ".size())";
    }
    case FormRole::VectorCount:
      if (form.sizing == Sizing::Enumerate) {
        return "&" + (query ? p.name : count_local);
      }
      if (form.sizing == Sizing::Capacity) {
        return "&" + count_local;
      }
      if (form.sizing == Sizing::Requested) {
        return "&" + p.name;
      }
      for (std::size_t a = 0; a < form.params.size(); ++a) {
        if (form.params[a].role == FormRole::Vector && form.params[a].count == i) {
          return "static_cast<" + p.type + ">(" + plan.function.params[a].name + ".size())";
        }
      }
      return "0";
    case FormRole::Key:
      return "Key";
    case FormRole::KeyedSize:
      return p.is_pointer ? "&" + p.name : "sizeof(" + [&] {
        for (std::size_t a = 0; a < form.params.size(); ++a) {
          if (form.params[a].role == FormRole::KeyedValue) {
            return plan.function.params[a].name;
          }
        }
        return std::string("Key");
      }() + ")";
  }
  return p.name;
}

std::string keyed_type(const LibraryConfig& config, const SecondForm& form) {
  return "typename ::cuwrap::" + config.ns + "::" + form.key->traits + "<Key>::type";
}

std::string result_member_type(const FormParam& fp) {
  switch (fp.role) {
    case FormRole::Vector:
      return "std::vector<" + fp.element + ">";
    case FormRole::Fixed:
      return "std::array<" + fp.element + ", " + std::to_string(fp.fixed) + ">";
    default:
      return fp.element;
  }
}

// cuPointerGetAttributes<A, B>(ptr): a tuple of the keys' value types.
void fill_plural(Dict& d, const LibraryConfig& config, const FunctionPlan& plan) {
  const Function& f = plan.function;
  const SecondForm& form = *plan.second;
  Dict* s = d.AddSectionDictionary("PLURAL");
  s->SetValue("RULE", form.why);
  if (!plan.log_handle.empty()) {
    s->AddSectionDictionary("LOG")->SetValue("HANDLE", plan.log_handle);
  }
  s->SetValue("VALUE_TYPES",
              "typename ::cuwrap::" + config.ns + "::" + form.key->traits + "<Keys>::type...");
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    const Param& p = f.params[i];
    std::string arg = p.name;
    switch (form.params[i].role) {
      case FormRole::Input:
        s->AddSectionDictionary("INPUT")->SetValue("DECL", declare(p.type, p.name));
        break;
      case FormRole::Key:
        s->SetValue("ENUM", p.pointee);
        arg = "keys";
        break;
      case FormRole::KeyedValue:
        arg = "values";
        break;
      case FormRole::KeyedSize:
        s->AddSectionDictionary("SIZES")->SetValue("TYPE", p.pointee);
        arg = "sizes";
        break;
      default:
        arg = "static_cast<" + p.type + ">(sizeof...(Keys))";
        break;
    }
    s->AddSectionDictionary("ARG")->SetValue("EXPR", arg);
  }
}

void fill_second(Dict& d, const LibraryConfig& config, const FunctionPlan& plan, bool out_of_line) {
  const Function& f = plan.function;
  const SecondForm& form = *plan.second;
  if (form.plural) {
    fill_plural(d, config, plan);
    return;
  }
  Dict* s = d.AddSectionDictionary("SECOND");
  show_linkage(*s, out_of_line && !form.key);
  s->SetValue("RULE", form.why);
  // The typed form's error carries what the raw-pointer form's carries (the log of the
  // handle it names): the more typed form is never the one that says less.
  if (!plan.log_handle.empty()) {
    s->AddSectionDictionary("LOG")->SetValue("HANDLE", plan.log_handle);
  }
  std::string value_name;
  std::string count_local;
  std::vector<std::size_t> returned;
  std::vector<std::string> overload_inputs;  // JitOptions& in place of the JIT arrays
  std::vector<std::string> overload_args;
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    const Param& p = f.params[i];
    const FormParam& fp = form.params[i];
    auto input = [&](const std::string& decl) {
      Dict* in = s->AddSectionDictionary("INPUT");
      in->SetValue("DECL", decl);
      if (fp.jit == JitRole::Options) {
        overload_inputs.emplace_back("::cuwrap::driver::JitOptions& jit");
        overload_args.emplace_back("jit.options()");
      } else if (fp.jit == JitRole::Values) {
        overload_args.emplace_back("jit.values_for_call()");
      } else {
        overload_inputs.push_back(decl);
        overload_args.push_back(p.name);
      }
    };
    auto local = [&](const std::string& type, const std::string& init) {
      Dict* l = s->AddSectionDictionary("LOCAL");
      l->SetValue("TYPE", type);
      l->SetValue("NAME", p.name);
      l->SetValue("INIT", init);
    };
    switch (fp.role) {
      case FormRole::Input:
        input(declare(p.type, p.name));
        break;
      case FormRole::InOut:
        input(fp.element + " " + p.name);
        returned.push_back(i);
        break;
      case FormRole::Span:
        input("std::span<" + fp.element + "> " + p.name);
        break;
      case FormRole::Output:
      case FormRole::Fixed:
        local(result_member_type(fp), "{}");
        returned.push_back(i);
        break;
      case FormRole::Vector: {
        std::string init;
        if (form.sizing == Sizing::Sibling) {
          std::string args;
          for (std::size_t a = 0; a < f.params.size(); ++a) {
            if (form.params[a].role == FormRole::Input) {
              args += (args.empty() ? "" : ", ") + f.params[a].name;
            }
          }
          init = "(static_cast<std::size_t>(::cuwrap::" + config.ns + "::" + form.count_function +
                 "(" + args + ")))";
        } else if (form.sizing == Sizing::SpanLength || form.sizing == Sizing::Requested) {
          init = "(" + f.params[fp.count].name +
                 (form.sizing == Sizing::SpanLength ? ".size()" : "") + ")";
        }
        local(result_member_type(fp), init);
        returned.push_back(i);
        s->AddSectionDictionary("VECTOR")->SetValue("NAME", p.name);
        break;
      }
      case FormRole::VectorCount:
        if (form.sizing == Sizing::Enumerate) {
          count_local = p.name + "_filled";
          s->AddSectionDictionary("ENUMERATE");
          s->SetValue("COUNT", p.name);  // on the form: the VECTOR lines read them too
          s->SetValue("COUNT_TYPE", fp.element);
          s->SetValue("FILLED", count_local);
        } else if (form.sizing == Sizing::Requested) {
          input(fp.element + " " + p.name);
        } else if (form.sizing == Sizing::Capacity) {
          count_local = p.name + "_filled";
          Dict* c = s->AddSectionDictionary("CAPACITY");
          s->SetValue("COUNT", p.name);  // on the form: the VECTOR lines read them too
          s->SetValue("FILLED", count_local);
          c->SetValue("COUNT_TYPE", fp.element);
          c->SetValue("STATUS_LOCAL", free_local(f, "status"));
          c->SetValue("STATUS_TYPE", config.status_type);
          c->SetValue("SUCCESS", config.success);
          c->SetValue("TOO_SMALL", plan.sized_status);
        }
        break;
      case FormRole::Key: {
        Dict* k = s->AddSectionDictionary("KEYED");
        k->SetValue("ENUM", p.type);
        break;
      }
      case FormRole::KeyedValue:
        value_name = p.name;
        if (form.setter) {
          input(keyed_type(config, form) + " " + p.name);
        } else {
          local(keyed_type(config, form), "{}");
          returned.push_back(i);
        }
        break;
      case FormRole::KeyedSize:
        if (p.is_pointer) {
          local(fp.element, " = sizeof(" + value_name + ")");
        }
        break;
      case FormRole::SpanCount:
        break;
    }
  }
  // Paired spans of one count must be equally long (optional ones may be empty), checked
  // before the C function is called.
  for (std::size_t c = 0; c < f.params.size(); ++c) {
    const auto spans = spans_of(form, c);
    for (std::size_t k = 1; k < spans.size(); ++k) {
      Dict* same = s->AddSectionDictionary("SAME_LENGTH");
      same->SetValue("FIRST", f.params[spans[0]].name);
      same->SetValue("OTHER", f.params[spans[k]].name);
      same->SetValue("OPTIONAL", form.params[spans[k]].optional ? "true" : "false");
    }
  }
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    Dict* q = s->AddSectionDictionary("QARG");
    q->SetValue("EXPR", second_arg(plan, i, true, count_local));
    Dict* a = s->AddSectionDictionary("ARG");
    a->SetValue("EXPR", second_arg(plan, i, false, count_local));
  }
  std::string jit_result_type = "void";
  if (returned.empty()) {
    s->SetValue("RESULT_TYPE", "void");
  } else if (returned.size() == 1) {
    const FormParam& fp = form.params[returned[0]];
    jit_result_type =
        fp.role == FormRole::KeyedValue ? keyed_type(config, form) : result_member_type(fp);
    s->SetValue("RESULT_TYPE", jit_result_type);
    s->AddSectionDictionary("RETURN_ONE")->SetValue("NAME", f.params[returned[0]].name);
  } else {
    jit_result_type = form.result_name;
    s->SetValue("RESULT_TYPE", form.result_name);
    Dict* agg = s->AddSectionDictionary("AGGREGATE");
    agg->SetValue("RESULT_NAME", form.result_name);
    Dict* ret = s->AddSectionDictionary("RETURN_ALL");
    for (std::size_t i : returned) {
      Dict* m = agg->AddSectionDictionary("MEMBER");
      m->SetValue("TYPE", result_member_type(form.params[i]));
      m->SetValue("NAME", f.params[i].name);
      ret->AddSectionDictionary("MEMBER")->SetValue("NAME", f.params[i].name);
    }
  }
  if (form.jit != JitUse::None) {
    s->AddSectionDictionary("JIT")->SetValue(
        "ARGS", f.params[form.jit_options].name + ", " + f.params[form.jit_values].name + ", " +
                    (form.jit == JitUse::OwnErrorLog ? "true" : "false"));
    Dict* overload = d.AddSectionDictionary("JIT_OVERLOAD");
    show_linkage(*overload, out_of_line);
    overload->SetValue("RESULT_TYPE", jit_result_type);
    for (const auto& decl : overload_inputs) {
      overload->AddSectionDictionary("INPUT")->SetValue("DECL", decl);
    }
    for (const auto& arg : overload_args) {
      overload->AddSectionDictionary("ARG")->SetValue("EXPR", arg);
    }
  }
  if (form.sizing == Sizing::Enumerate || form.sizing == Sizing::Capacity) {
    return;  // the ENUMERATE and CAPACITY sections make their own calls
  }
  if (form.sizing == Sizing::Requested) {
    for (std::size_t a = 0; a < f.params.size(); ++a) {
      if (form.params[a].role == FormRole::Vector) {
        Dict* r = s->AddSectionDictionary("REQUESTED");
        r->SetValue("COUNT", f.params[form.params[a].count].name);
        r->SetValue("NAME", f.params[a].name);
      }
    }
  }
  if (form.answer_status.empty()) {
    s->ShowSection("CHECKED");
  } else {
    s->AddSectionDictionary("ANSWER")->SetValue("STATUS", form.answer_status);
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
  const bool jit = plan.second && plan.second->jit != JitUse::None;
  d->SetValue("CHECK", jit ? "jit_call.check" : "::cuwrap::detail::check");
  if (jit) {
    lib.ShowSection("JIT_INCLUDE");
  }
  // A launch taking its kernel's arguments as `void** kernelParams` (cuLaunchKernel,
  // cuLaunchKernelEx): the typed launches that pack them are in kernel_arguments.hpp.
  if (std::any_of(f.params.begin(), f.params.end(),
                  [](const Param& p) { return p.name == "kernelParams" && p.type == "void**"; })) {
    lib.ShowSection("LAUNCH_INCLUDE");
  }
  const bool per_thread = library.config.per_thread && !f.per_thread_symbol.empty();
  if (per_thread) {
    d->ShowSection("PER_THREAD");
  }
  // A library whose header needs system headers (cudaGL.h, cudaEGL.h) keeps its forms
  // inline: its source compiles without them.
  const bool out_of_line = !per_thread && library.config.system_headers.empty();
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
  Dict* typed = d->AddSectionDictionary("TYPED");
  show_linkage(*typed, out_of_line);
  fill_typed(*typed, plan);
  if (plan.second) {
    fill_second(*d, library.config, plan, out_of_line);
  }
  if (plan.one_call) {
    Dict* one = d->AddSectionDictionary("ONE_CALL");
    show_linkage(*one, out_of_line);
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
  d.SetValue("ERROR_TYPE", c.error_type);
  std::string upper = c.ns;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
  d.SetValue("NS_UPPER", upper);
  d.SetValue("DEFINE_MACRO", "CUWRAP_DEFINE_" + upper + "_FUNCTIONS");
  if (c.system_headers.empty()) {
    d.ShowSection("OUT_OF_LINE_DEFINITIONS");  // see show_linkage
  }
  if (!c.support_header.empty()) {
    d.AddSectionDictionary("SUPPORT_HEADER")->SetValue("PATH", c.support_header);
  }
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

// The three headers of one library (docs/regenerating.md): NS_enums.hpp, NS_raw.hpp and
// NS.hpp, expanded from one dictionary, each template taking the sections it needs.
void render_headers(const std::filesystem::path& dir, const Plan& plan, const LibraryPlan& library,
                    std::vector<OutputFile>& files) {
  Dict d("library.hpp");
  fill_common(d, plan, library);
  std::set<std::string> traits;
  for (const auto& f : library.functions) {
    fill_function(d, library, f);
    if (f.second && f.second->key && traits.insert(f.second->key->traits).second) {
      Dict* t = d.AddSectionDictionary("KEY_TRAITS");
      t->SetValue("ENUM", f.second->key->enum_name);
      t->SetValue("TRAITS", f.second->key->traits);
      for (const auto& [enumerator, type] : f.second->key->types) {
        Dict* e = t->AddSectionDictionary("TYPE");
        e->SetValue("ENUMERATOR", enumerator);
        e->SetValue("TYPE", type);
      }
    }
  }
  if (!library.owning.empty()) {
    Dict* owning = d.AddSectionDictionary("OWNING_HANDLES");
    for (const auto& o : library.owning) {
      Dict* h = owning->AddSectionDictionary("OWNING");
      h->SetValue("HANDLE", o.handle);
      h->SetValue("DESTROY", o.destroy);
      std::string creators;
      for (const auto& c : o.creators) {
        creators += (creators.empty() ? "" : ", ") + c;
      }
      h->SetValue("CREATORS", creators);
    }
  }
  const std::string base = "include/cuwrap/" + library.config.ns;
  files.push_back({base + "_enums.hpp", expand(dir, "library_enums.hpp.tpl", d)});
  files.push_back({base + "_raw.hpp", expand(dir, "library_raw.hpp.tpl", d)});
  files.push_back({base + ".hpp", expand(dir, "library.hpp.tpl", d)});
}

std::string render_source(const std::filesystem::path& dir, const Plan& plan,
                          const LibraryPlan& library) {
  Dict d("library.cpp");
  fill_common(d, plan, library);
  if (&library == &plan.libraries.front()) {
    d.ShowSection("SHARED");  // the helpers detail/symbols.hpp declares, defined once
  }
  // cudaGL.h needs GL/gl.h, and nvml.h is not in every install: without them only the symbol
  // table compiles (the loader links it), so the checked-in source builds everywhere.
  std::string names;
  std::string condition;
  if (library.config.extra_headers_only) {
    condition = "__has_include(<" + library.config.header + ">)";
  }
  // A statically linked library: the build links its archive only where its option is ON.
  if (!library.config.cmake_option.empty()) {
    condition = "defined(" + library.config.cmake_option + ") && " + condition;
  }
  for (const auto& h : library.config.system_headers) {
    names += (names.empty() ? "" : ", ") + h;
    condition += (condition.empty() ? "" : " && ") + ("__has_include(<" + h + ">)");
  }
  if (!condition.empty()) {
    d.ShowSection("SYSTEM_HEADERS");
    d.SetValue("SYSTEM_NAMES", names.empty() ? "is not in every install" : "includes " + names);
    d.SetValue("SYSTEM_WHAT", library.config.extra_headers_only ? "typed forms and the enums' names"
                                                                : "enums' names");
    d.SetValue("SYSTEM_CONDITION", condition);
  }
  Dict* addresses = nullptr;
  if (!library.config.static_library.empty()) {
    addresses = d.AddSectionDictionary("ADDRESSES");
    addresses->SetValue("CONDITION", condition);
    addresses->SetValue("OPTION", library.config.cmake_option);
    addresses->SetValue("ARCHIVE", soname_for(library.config, plan.cuda_version));
  }
  for (const auto& f : library.functions) {
    if (addresses != nullptr) {
      addresses->AddSectionDictionary("ADDRESS")->SetValue("NAME", f.function.name);
    }
    Dict* s = d.AddSectionDictionary("SYMBOL");
    s->SetValue("NAME", f.function.name);
    s->SetValue("SYMBOL", f.function.symbol);
    s->SetIntValue("VERSION", f.function.abi_version);
    s->SetIntValue("PTDS_VERSION", f.function.per_thread_abi_version);
    s->SetValue("PROC_NAME", f.function.proc_name.empty() ? std::string("nullptr")
                                                          : "\"" + f.function.proc_name + "\"");
  }
  return expand(dir, "library.cpp.tpl", d);
}

std::string render_symbols(const std::filesystem::path& dir, const Plan& plan) {
  Dict d("symbols.hpp");
  d.SetIntValue("CUDA_VERSION", plan.cuda_version);
  d.SetValue("ABI_SOURCE", abi_source_name(plan.abi_source));
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
    if (!library.config.static_library.empty()) {
      l->AddSectionDictionary("STATIC")->SetValue("ARCHIVE",
                                                  soname_for(library.config, plan.cuda_version));
    }
  }
  // A library whose header was missing (nvJitLink.h before CUDA 12, nvvm.h of a
  // header-only set) keeps an empty table, so the loader compiles unchanged and says
  // that the header was missing when anything calls into it.
  for (const auto& config : library_configs()) {
    const bool present =
        std::any_of(plan.libraries.begin(), plan.libraries.end(),
                    [&](const LibraryPlan& l) { return l.config.header == config.header; });
    if (!present) {
      Dict* a = d.AddSectionDictionary("ABSENT");
      a->SetValue("HEADER", config.header);
      a->SetValue("TABLE", config.table);
      if (!config.static_library.empty()) {
        a->ShowSection("STATIC");
      }
    }
    Dict* row = d.AddSectionDictionary("ROW");
    row->SetValue("LIBRARY", config.library);
    row->SetValue("HEADER", config.header);
    row->SetValue("DISPLAY", config.display);
    row->SetValue("ENV", config.env);
    row->SetValue("SONAME", soname_for(config, plan.cuda_version));
    std::string dirs;
    for (const auto& dir : config.lib_dirs) {
      dirs += (dirs.empty() ? "" : ":") + dir;
    }
    row->SetValue("LIB_DIRS", dirs);
    row->SetValue("TABLE", config.table);
    row->SetValue("GENERATED", present ? "true" : "false");
    row->SetValue("DRIVER_ENTRY_POINTS", config.driver_entry_points ? "true" : "false");
    row->SetValue("ADDRESSES",
                  config.static_library.empty() ? "nullptr" : "k" + config.table + "Addresses");
    row->SetValue("OPTION",
                  config.static_library.empty() ? "nullptr" : "\"" + config.cmake_option + "\"");
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
    ed->SetValue("TYPE", e.type);
  }
  return expand(dir, "attributes.inc.tpl", d);
}

// The condition under which a build has `config`'s library: its header, the system
// headers it includes, and its generated enums (the bindings of this build).
std::string has_condition(const LibraryConfig& config) {
  std::string condition = "__has_include(<" + config.header + ">)";
  for (const auto& h : config.system_headers) {
    condition += " && __has_include(<" + h + ">)";
  }
  condition += " && __has_include(<cuwrap/" + config.ns + "_enums.hpp>)";
  if (!config.cmake_option.empty()) {
    condition = "defined(" + config.cmake_option + ") && " + condition;
  }
  return condition;
}

// The per-library fields of the error layer's templates, for a row owning its error type.
void fill_error(Dict& e, const LibraryConfig& c) {
  e.SetValue("MACRO", has_macro(c));
  e.SetValue("HEADER", c.header);
  e.SetValue("NS", c.ns);
  e.SetValue("LIBRARY", c.library);
  e.SetValue("DISPLAY", c.display);
  e.SetValue("STATUS_TYPE", c.status_type);
  e.SetValue("CODE_TYPE", status_code_type(c));
  e.SetValue("CODE", status_code(c, "code"));  // the code of the status named `code`
  e.SetValue("ERROR_TYPE", c.error_type);
  e.SetValue("SUCCESS", c.success);
  if (!c.status_code_member.empty()) {
    e.AddSectionDictionary("STRUCT")->SetValue("CODE_MEMBER", c.status_code_member);
  }
  // With a second code, the status's text is one function and the message another.
  e.SetValue("TEXT_FUNCTION",
             c.ns + (c.status_detail_member.empty() ? "_description" : "_code_text"));
  if (!c.status_detail_member.empty()) {
    Dict* detail = e.AddSectionDictionary("DETAIL");
    detail->SetValue("DETAIL_MEMBER", c.status_detail_member);
    detail->SetValue("DETAIL_TYPE", c.status_detail_type);
    detail->SetValue("DETAIL_WHEN", c.status_detail_when);
    detail->SetValue("DETAIL_ACCESSOR", c.status_detail_accessor);
  }
  e.SetValue("LOG_WHAT", c.log_what.empty() ? std::string("the library's log") : c.log_what);
  if (!c.log_handle_type.empty() && !c.log_function.empty()) {
    Dict* log = e.AddSectionDictionary("LOG");
    log->SetValue("LOG_HANDLE", c.log_handle_type);
    log->SetValue("LOG_SIZE_FUNCTION", c.log_size_function);
    log->SetValue("LOG_FUNCTION", c.log_function);
  } else if (!c.log_what.empty()) {
    e.ShowSection("ERROR_LOG");  // a log that is not read from a handle (the driver's JIT log)
  }
  if (!c.error_string.empty()) {
    Dict* text = e.AddSectionDictionary("ERROR_STRING");
    text->SetValue("FUNCTION", c.error_string);
    // A function of the header itself is called directly, others through the loader.
    text->SetValue(
        "CALL", c.error_string_inline ? "::" + c.error_string : c.ns + "::raw::" + c.error_string);
    text->SetValue("WHEN", c.error_string_inline ? "" : " when " + c.display + " loads");
    text->ShowSection(c.error_string_out ? "OUT" : "RETURNED");
  }
  if (!c.error_alias.empty()) {
    e.AddSectionDictionary("ALIAS")->SetValue("ALIAS", c.error_alias);
  }
  if (!c.handwritten_throw) {
    e.ShowSection("GENERATED_THROW");
  }
}

// The files written from the table alone (the same whatever headers were found): the
// build's macros, the exception types, their bodies and the CMake list.
void render_table(const std::filesystem::path& dir, const std::vector<OutputFile>& written,
                  std::vector<OutputFile>& files) {
  Dict d("libraries");
  for (const auto& c : library_configs()) {
    Dict* row = d.AddSectionDictionary("ROW");
    row->SetValue("HEADER", c.header);
    row->SetValue("NS", c.ns);
    row->SetValue("DISPLAY", c.display);
    row->SetValue("MACRO", has_macro(c));
    row->SetValue("OPTIONAL", c.optional ? "ON" : "OFF");
    row->SetValue("EXTRA_ONLY", c.extra_headers_only ? "ON" : "OFF");
    row->SetValue("OPTION", c.cmake_option);
    row->SetValue("STATIC", c.static_library);
    for (const auto& dir_name : c.include_dirs) {
      row->AddSectionDictionary("DIR")->SetValue("DIR", dir_name);
    }
    if (c.optional) {
      row->ShowSection("OPTIONAL");
    }
    if (!c.cmake_option.empty()) {
      row->AddSectionDictionary("OPTION")->SetValue("OPTION", c.cmake_option);
    }
    std::string system_names;
    for (const auto& h : c.system_headers) {
      row->AddSectionDictionary("SYSTEM")->SetValue("NAME", h);
      system_names += (system_names.empty() ? "" : ", ") + h;
    }
    if (!system_names.empty()) {
      row->AddSectionDictionary("SYSTEMS")->SetValue("SYSTEM_NAMES", system_names);
    }
    if (!c.optional && c.system_headers.empty() && c.cmake_option.empty()) {
      row->ShowSection("ALWAYS");
    } else {
      Dict* some = row->AddSectionDictionary("SOMETIMES");
      some->SetValue("CONDITION", has_condition(c));
      if (owns_error_type(c)) {
        some->ShowSection("OWN_ERROR");
      }
    }
    if (owns_error_type(c)) {
      Dict* kind = d.AddSectionDictionary("KIND");
      kind->SetValue("LIBRARY", c.library);
      kind->SetValue("STATUS_TYPE", status_code_type(c));
      kind->SetValue("HEADER", c.header);
      kind->SetValue("ERROR_TYPE", c.error_type);
      kind->ShowSection(c.handwritten_throw ? "CODE" : "STATUS");
      fill_error(*d.AddSectionDictionary("ERROR"), c);
    }
  }
  // What every run writes besides the libraries' own files (symbols.hpp, the attribute
  // lists, the files below), for the CMake list.
  std::set<std::string> own;
  for (const auto& c : library_configs()) {
    for (const char* suffix : {".hpp", "_raw.hpp", "_enums.hpp"}) {
      own.insert("include/cuwrap/" + c.ns + suffix);
    }
    own.insert("src/" + c.ns + ".cpp");
  }
  const std::vector<OutputFile> table_files = {{"include/cuwrap/detail/libraries.hpp", ""},
                                               {"include/cuwrap/detail/library_errors.hpp", ""},
                                               {"src/library_errors.cpp", ""}};
  for (const auto* list : {&written, &table_files}) {
    for (const auto& f : *list) {
      if (own.count(f.path) != 0) {
        continue;
      }
      if (f.path.rfind("include/", 0) == 0) {
        d.AddSectionDictionary("SHARED_HEADER")->SetValue("PATH", f.path);
      } else if (f.path.rfind("src/", 0) == 0) {
        d.AddSectionDictionary("SHARED_SOURCE")
            ->SetValue("NAME", f.path.substr(4, f.path.size() - 4 - 4));
      }
    }
  }
  files.push_back({"include/cuwrap/detail/libraries.hpp", expand(dir, "libraries.hpp.tpl", d)});
  files.push_back(
      {"include/cuwrap/detail/library_errors.hpp", expand(dir, "library_errors.hpp.tpl", d)});
  files.push_back({"src/library_errors.cpp", expand(dir, "library_errors.cpp.tpl", d)});
  files.push_back({"libraries.cmake", expand(dir, "libraries.cmake.tpl", d)});
}

}  // namespace

std::vector<OutputFile> render(const Plan& plan, const std::filesystem::path& template_dir) {
  register_modifiers();
  std::vector<OutputFile> files;
  for (const auto& library : plan.libraries) {
    render_headers(template_dir, plan, library, files);
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
  const std::vector<OutputFile> written = files;
  render_table(template_dir, written, files);
  return files;
}

}  // namespace cuwrap::gen
