// The interposer's generated table. See interposer.hpp.
#include "interposer.hpp"

#include <ctemplate/template.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace cuwrap::gen {
namespace {

// One function's effect on live handles: (function, kind, create?, parameter, by value?).
struct HandleRule {
  std::string_view function;
  std::string_view kind;
  bool create;
  std::string_view param;
  bool by_value;
};

// Every create/destroy pair whose handles the interposer counts. A create is keyed by
// what its output parameter points to, a release by its input's value; a primary
// context retain and release are both keyed by the device.
constexpr std::array kHandleRules = {
    HandleRule{"cuMemAlloc", "memory", true, "dptr", false},
    HandleRule{"cuMemAllocPitch", "memory", true, "dptr", false},
    HandleRule{"cuMemAllocManaged", "memory", true, "dptr", false},
    HandleRule{"cuMemAllocAsync", "memory", true, "dptr", false},
    HandleRule{"cuMemAllocFromPoolAsync", "memory", true, "dptr", false},
    HandleRule{"cuMemPoolImportPointer", "memory", true, "ptr_out", false},
    HandleRule{"cuMemFree", "memory", false, "dptr", false},
    HandleRule{"cuMemFreeAsync", "memory", false, "dptr", false},
    HandleRule{"cuMemAllocHost", "host memory", true, "pp", false},
    HandleRule{"cuMemHostAlloc", "host memory", true, "pp", false},
    HandleRule{"cuMemFreeHost", "host memory", false, "p", false},
    HandleRule{"cuMemHostRegister", "host registration", true, "p", true},
    HandleRule{"cuMemHostUnregister", "host registration", false, "p", false},
    HandleRule{"cuMemPoolCreate", "memory pool", true, "pool", false},
    HandleRule{"cuMemPoolDestroy", "memory pool", false, "pool", false},
    HandleRule{"cuMemCreate", "physical memory", true, "handle", false},
    HandleRule{"cuMemRelease", "physical memory", false, "handle", false},
    HandleRule{"cuMemAddressReserve", "address range", true, "ptr", false},
    HandleRule{"cuMemAddressFree", "address range", false, "ptr", false},
    HandleRule{"cuIpcOpenMemHandle", "ipc mapping", true, "pdptr", false},
    HandleRule{"cuIpcCloseMemHandle", "ipc mapping", false, "dptr", false},
    HandleRule{"cuStreamCreate", "stream", true, "phStream", false},
    HandleRule{"cuStreamCreateWithPriority", "stream", true, "phStream", false},
    HandleRule{"cuStreamDestroy", "stream", false, "hStream", false},
    HandleRule{"cuEventCreate", "event", true, "phEvent", false},
    HandleRule{"cuEventDestroy", "event", false, "hEvent", false},
    HandleRule{"cuModuleLoad", "module", true, "module", false},
    HandleRule{"cuModuleLoadData", "module", true, "module", false},
    HandleRule{"cuModuleLoadDataEx", "module", true, "module", false},
    HandleRule{"cuModuleLoadFatBinary", "module", true, "module", false},
    HandleRule{"cuModuleUnload", "module", false, "hmod", false},
    HandleRule{"cuLibraryLoadData", "library", true, "library", false},
    HandleRule{"cuLibraryLoadFromFile", "library", true, "library", false},
    HandleRule{"cuLibraryUnload", "library", false, "library", false},
    HandleRule{"cuGraphCreate", "graph", true, "phGraph", false},
    HandleRule{"cuGraphClone", "graph", true, "phGraphClone", false},
    HandleRule{"cuStreamEndCapture", "graph", true, "phGraph", false},
    HandleRule{"cuGraphDestroy", "graph", false, "hGraph", false},
    HandleRule{"cuGraphInstantiate", "graph exec", true, "phGraphExec", false},
    HandleRule{"cuGraphInstantiateWithFlags", "graph exec", true, "phGraphExec", false},
    HandleRule{"cuGraphInstantiateWithParams", "graph exec", true, "phGraphExec", false},
    HandleRule{"cuGraphExecDestroy", "graph exec", false, "hGraphExec", false},
    HandleRule{"cuCtxCreate", "context", true, "pctx", false},
    HandleRule{"cuCtxDestroy", "context", false, "ctx", false},
    HandleRule{"cuDevicePrimaryCtxRetain", "primary context", true, "dev", true},
    HandleRule{"cuDevicePrimaryCtxRelease", "primary context", false, "dev", false},
    HandleRule{"cuGreenCtxCreate", "green context", true, "phCtx", false},
    HandleRule{"cuGreenCtxDestroy", "green context", false, "hCtx", false},
    HandleRule{"cuLinkCreate", "link", true, "stateOut", false},
    HandleRule{"cuLinkDestroy", "link", false, "state", false},
    HandleRule{"cuArrayCreate", "array", true, "pHandle", false},
    HandleRule{"cuArray3DCreate", "array", true, "pHandle", false},
    HandleRule{"cuArrayDestroy", "array", false, "hArray", false},
    HandleRule{"cuMipmappedArrayCreate", "mipmapped array", true, "pHandle", false},
    HandleRule{"cuMipmappedArrayDestroy", "mipmapped array", false, "hMipmappedArray", false},
    HandleRule{"cuTexObjectCreate", "texture object", true, "pTexObject", false},
    HandleRule{"cuTexObjectDestroy", "texture object", false, "texObject", false},
    HandleRule{"cuSurfObjectCreate", "surface object", true, "pSurfObject", false},
    HandleRule{"cuSurfObjectDestroy", "surface object", false, "surfObject", false},
};

// Entry points the interposer implements itself rather than wraps.
constexpr std::array<std::string_view, 3> kOwnEntries = {"cuGetProcAddress", "cuGetProcAddress_v2",
                                                         "cuDriverGetVersion"};

const char* const kDriverHeader = "cuda.h";

// One table row: a wrapper for `function` as reached by default or per-thread requests.
void add_entry(ctemplate::TemplateDictionary& dict, const FunctionPlan& plan, bool per_thread,
               long index, int cuda_version) {
  const Function& f = plan.function;
  auto* e = dict.AddSectionDictionary("ENTRY");
  e->SetIntValue("INDEX", index);
  e->SetValue("NAME", f.proc_name.empty() ? f.name : f.proc_name);
  e->SetValue("FUNCTION", f.name);
  e->SetValue("SYMBOL", per_thread ? f.per_thread_symbol : f.symbol);
  int version =
      per_thread && f.per_thread_abi_version != 0 ? f.per_thread_abi_version : f.abi_version;
  e->SetIntValue("VERSION", version != 0 ? version : cuda_version);
  e->SetValue("PER_THREAD", per_thread ? "true" : "false");
  std::string names;
  unsigned long out_mask = 0;
  unsigned long hex_mask = 0;
  const auto outputs = plan.outputs();
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    auto* p = e->AddSectionDictionary("PARAM");
    p->SetValue("DECL", declare(f.params[i].type, f.params[i].name));
    p->SetValue("NAME", f.params[i].name);
    names += (i == 0 ? "" : ",") + f.params[i].name;
    if (i < 32 && std::find(outputs.begin(), outputs.end(), i) != outputs.end()) {
      out_mask |= 1ul << i;
    }
    if (i < 32 && f.params[i].type.rfind("CUdeviceptr", 0) == 0 && !f.params[i].is_pointer) {
      hex_mask |= 1ul << i;  // a device address reads best in hex
    }
  }
  e->SetValue("PARAMS", names);
  e->SetValue("OUT_MASK", std::to_string(out_mask));
  e->SetValue("HEX_MASK", std::to_string(hex_mask));
  const auto effect = handle_effect(f.name);
  std::string kind;
  std::string effect_name = "None";
  long param = -1;
  if (effect) {
    const auto it = std::find_if(f.params.begin(), f.params.end(),
                                 [&](const Param& p) { return p.name == effect->param; });
    if (it == f.params.end()) {
      throw RenderFailure("interposer handle rule: " + f.name + " has no parameter '" +
                          effect->param +
                          "' (update kHandleRules in generator/src/interposer.cpp)");
    }
    param = static_cast<long>(it - f.params.begin());
    kind = effect->kind;
    effect_name = effect->create ? (effect->by_value ? "CreateByValue" : "Create") : "Destroy";
  }
  e->SetValue("EFFECT", effect_name);
  e->SetValue("KIND", kind);
  e->SetIntValue("HANDLE_PARAM", param);
}

}  // namespace

std::optional<HandleEffect> handle_effect(const std::string& name) {
  for (const auto& rule : kHandleRules) {
    if (rule.function == name) {
      return HandleEffect{std::string(rule.kind), rule.create, std::string(rule.param),
                          rule.by_value};
    }
  }
  return std::nullopt;
}

bool interposer_wraps(const Function& function) {
  return function.header == kDriverHeader && function.return_type == "CUresult" &&
         !function.variadic &&
         std::find(kOwnEntries.begin(), kOwnEntries.end(), function.name) == kOwnEntries.end();
}

std::optional<OutputFile> render_interposer(const Plan& plan,
                                            const std::filesystem::path& template_dir) {
  const auto library =
      std::find_if(plan.libraries.begin(), plan.libraries.end(),
                   [](const LibraryPlan& l) { return l.config.header == kDriverHeader; });
  if (library == plan.libraries.end()) {
    return std::nullopt;
  }
  ctemplate::TemplateDictionary dict("interposer.cpp");
  dict.SetIntValue("CUDA_VERSION", plan.cuda_version);
  long index = 0;
  for (const auto& f : library->functions) {
    if (!interposer_wraps(f.function)) {
      continue;
    }
    add_entry(dict, f, false, index++, plan.cuda_version);
    if (!f.function.per_thread_symbol.empty()) {
      add_entry(dict, f, true, index++, plan.cuda_version);
    }
  }
  for (const auto& e : library->enums) {
    if (e.is_status) {
      for (const auto& c : e.cases) {
        dict.AddSectionDictionary("STATUS")->SetValue("NAME", c.name);
      }
    }
  }
  const std::filesystem::path path = template_dir / "interposer.cpp.tpl";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw RenderFailure("template not found: " + path.string());
  }
  std::string text;
  if (!ctemplate::ExpandTemplate(path.string(), ctemplate::STRIP_BLANK_LINES, &dict, &text)) {
    throw RenderFailure("template does not expand: " + path.string());
  }
  return OutputFile{"interposer/interposer.cpp", std::move(text)};
}

}  // namespace cuwrap::gen
