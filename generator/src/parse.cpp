// Stage 1: libclang → API model. See parse.hpp.
//
// All three headers are read in one translation unit (they share the system headers),
// as C++17 with the detailed preprocessing record so that #define lines are visible.
// Only declarations whose expansion location lies in one of the wrapped headers are
// kept; what cuda.h hides behind __CUDA_API_VERSION_INTERNAL is never seen because that
// macro is not defined.
#include "parse.hpp"

#include "known_abi.hpp"

#include <clang-c/Index.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <unordered_map>

namespace cuwrap::gen {
namespace {

// ---------------------------------------------------------------------------------
// Helpers: libclang strings and handles, and comment-text clean-up.

std::string take(CXString s) {
  const char* c = clang_getCString(s);
  std::string out = c != nullptr ? c : "";
  clang_disposeString(s);
  return out;
}

std::string trim(std::string_view s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])) != 0) {
    ++b;
  }
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])) != 0) {
    --e;
  }
  return std::string(s.substr(b, e - b));
}

// Collapse runs of whitespace into single spaces.
std::string squeeze(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      space = !out.empty();
    } else {
      if (space) {
        out += ' ';
      }
      space = false;
      out += c;
    }
  }
  return out;
}

// Drop Doxygen's explicit line breaks (`\n` written in the comment text).
std::string without_newline_commands(std::string s) {
  for (std::size_t at = s.find("\\n"); at != std::string::npos; at = s.find("\\n", at)) {
    const bool command_ends =
        at + 2 == s.size() || std::isalnum(static_cast<unsigned char>(s[at + 2])) == 0;
    if (command_ends) {
      s.replace(at, 2, " ");
    } else {
      at += 2;
    }
  }
  return s;
}

// Drop Doxygen's explicit link markers ("the given #nvvmResult code", nvml.h's "calling
// \\ref nvmlDeviceGetCpuAffinityWithinScope with \\ref NVML_AFFINITY_SCOPE_NODE"), keeping
// the name: the generated comment would ask Doxygen for a link to a C type or constant it
// does not document.
std::string without_link_markers(std::string s) {
  for (const char* marker : {"\\ref ", "@ref "}) {
    for (std::size_t at = s.find(marker); at != std::string::npos; at = s.find(marker, at)) {
      s.erase(at, std::char_traits<char>::length(marker));
    }
  }
  for (std::size_t at = s.find('#'); at != std::string::npos; at = s.find('#', at)) {
    const bool starts_word = at == 0 || std::isspace(static_cast<unsigned char>(s[at - 1])) != 0;
    const bool names =
        at + 1 < s.size() &&
        (std::isalpha(static_cast<unsigned char>(s[at + 1])) != 0 || s[at + 1] == '_');
    if (starts_word && names) {
      s.erase(at, 1);
    } else {
      ++at;
    }
  }
  return s;
}

// Cut text after its first sentence: a '.' followed by a space and an upper-case
// letter ("e.g., x" and "1.5" do not end a sentence).
std::string first_sentence(std::string s) {
  for (std::size_t i = 0; i + 2 < s.size(); ++i) {
    if (s[i] == '.' && s[i + 1] == ' ' && std::isupper(static_cast<unsigned char>(s[i + 2])) != 0) {
      s.resize(i + 1);
      break;
    }
  }
  return s;
}

// libclang spells pointers as "T *"; cuwrap writes "T*" (and "T* const*").
std::string tidy_type(std::string s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ' ' && i + 1 < s.size() && (s[i + 1] == '*' || s[i + 1] == '&')) {
      continue;
    }
    out += s[i];
    if ((s[i] == '*' || s[i] == '&') && i + 1 < s.size() &&
        std::isalpha(static_cast<unsigned char>(s[i + 1])) != 0) {
      out += ' ';
    }
  }
  return out;
}

struct IndexDeleter {
  void operator()(void* index) const { clang_disposeIndex(index); }
};
struct UnitDeleter {
  void operator()(CXTranslationUnitImpl* tu) const { clang_disposeTranslationUnit(tu); }
};
using IndexPtr = std::unique_ptr<void, IndexDeleter>;
using UnitPtr = std::unique_ptr<CXTranslationUnitImpl, UnitDeleter>;

// Parse `source` (an in-memory file that includes the headers) with `extra` flags.
UnitPtr parse_unit(CXIndex index, const std::filesystem::path& dir, const std::string& source,
                   const std::vector<std::string>& extra) {
  const std::string include = "-I" + dir.string();
  std::vector<const char*> args = {"-x", "c++", "-std=c++17", include.c_str()};
  for (const auto& e : extra) {
    args.push_back(e.c_str());
  }
  const std::string main_file = (dir / "cuwrap-gen-input.cpp").string();
  CXUnsavedFile unsaved{main_file.c_str(), source.c_str(),
                        static_cast<unsigned long>(source.size())};
  CXTranslationUnit tu = nullptr;
  const CXErrorCode rc = clang_parseTranslationUnit2(
      index, main_file.c_str(), args.data(), static_cast<int>(args.size()), &unsaved, 1,
      CXTranslationUnit_DetailedPreprocessingRecord, &tu);
  if (rc != CXError_Success || tu == nullptr) {
    throw ParseFailure("libclang could not parse the headers in " + dir.string() + " (error code " +
                       std::to_string(static_cast<int>(rc)) + ")");
  }
  UnitPtr unit(tu);
  std::ostringstream errors;
  const unsigned n = clang_getNumDiagnostics(tu);
  for (unsigned i = 0; i < n; ++i) {
    CXDiagnostic d = clang_getDiagnostic(tu, i);
    if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error) {
      CXFile file = nullptr;
      unsigned line = 0;
      unsigned column = 0;
      clang_getSpellingLocation(clang_getDiagnosticLocation(d), &file, &line, &column, nullptr);
      errors << (file != nullptr ? take(clang_getFileName(file)) : std::string("<input>")) << ':'
             << line << ':' << column << ": " << take(clang_getDiagnosticSpelling(d)) << '\n';
    }
    clang_disposeDiagnostic(d);
  }
  if (!errors.str().empty()) {
    throw ParseFailure(errors.str());
  }
  return unit;
}

// A wrapped header and the file it was found as.
struct LocatedHeader {
  std::string name;            // "nvvm.h"
  std::filesystem::path path;  // <include>/../nvvm/include/nvvm.h
};

// Return the wrapped header a cursor's expansion location lies in, or "".
class HeaderFiles {
 public:
  HeaderFiles(CXTranslationUnit tu, const std::vector<LocatedHeader>& headers) {
    for (const auto& h : headers) {
      files_.emplace_back(clang_getFile(tu, h.path.string().c_str()), h.name);
    }
  }

  const std::string* header_of(CXCursor cursor) const {
    CXFile file = nullptr;
    clang_getExpansionLocation(clang_getCursorLocation(cursor), &file, nullptr, nullptr, nullptr);
    if (file == nullptr) {
      return nullptr;
    }
    for (const auto& [f, name] : files_) {
      if (f != nullptr && clang_File_isEqual(f, file) != 0) {
        return &name;
      }
    }
    return nullptr;
  }

 private:
  std::vector<std::pair<CXFile, std::string>> files_;
};

// Visit `parent`'s children with a lambda.
template <class F>
void visit_children(CXCursor parent, F&& f) {
  clang_visitChildren(
      parent, [](CXCursor c, CXCursor, CXClientData data) { return (*static_cast<F*>(data))(c); },
      &f);
}

// The tokens of a cursor's extent (used for #define bodies and written names).
std::vector<std::string> tokens_of(CXTranslationUnit tu, CXSourceRange range) {
  CXToken* tokens = nullptr;
  unsigned n = 0;
  clang_tokenize(tu, range, &tokens, &n);
  std::vector<std::string> out;
  out.reserve(n);
  for (unsigned i = 0; i < n; ++i) {
    out.push_back(take(clang_getTokenSpelling(tu, tokens[i])));
  }
  clang_disposeTokens(tu, tokens, n);
  return out;
}

// The name as written at the declaration (before macro expansion): for
// `CUresult cuMemAlloc(...)` under `#define cuMemAlloc cuMemAlloc_v2` this is
// "cuMemAlloc" while clang_getCursorSpelling says "cuMemAlloc_v2".
std::string written_name(CXTranslationUnit tu, CXCursor cursor) {
  CXFile file = nullptr;
  unsigned line = 0;
  unsigned column = 0;
  clang_getExpansionLocation(clang_getCursorLocation(cursor), &file, &line, &column, nullptr);
  CXToken* token = clang_getToken(tu, clang_getLocation(tu, file, line, column));
  if (token == nullptr) {
    return take(clang_getCursorSpelling(cursor));
  }
  std::string name = take(clang_getTokenSpelling(tu, *token));
  clang_disposeTokens(tu, token, 1);
  return name;
}

// The `/** ... */` comment right before `cursor` when only preprocessor lines separate
// them. clang attaches no comment across `#ifndef NVJITLINK_NO_INLINE`, which is how
// nvJitLink.h documents its public inline functions.
std::string comment_across_directives(CXTranslationUnit tu, CXCursor cursor) {
  CXFile file = nullptr;
  unsigned offset = 0;
  clang_getExpansionLocation(clang_getRangeStart(clang_getCursorExtent(cursor)), &file, nullptr,
                             nullptr, &offset);
  std::size_t size = 0;
  const char* text = file != nullptr ? clang_getFileContents(tu, file, &size) : nullptr;
  if (text == nullptr || offset > size) {
    return {};
  }
  const std::string_view source(text, size);
  std::size_t end = offset;  // one past the last character not yet skipped
  for (;;) {
    while (end > 0 && std::isspace(static_cast<unsigned char>(source[end - 1])) != 0) {
      --end;
    }
    const std::size_t line_start = source.rfind('\n', end == 0 ? 0 : end - 1);
    const std::size_t first = line_start == std::string_view::npos ? 0 : line_start + 1;
    const std::string line = trim(source.substr(first, end - first));
    if (line.empty() || line[0] != '#') {
      break;
    }
    end = first;  // skip a preprocessor line
  }
  if (end < 2 || source.substr(end - 2, 2) != "*/") {
    return {};
  }
  const std::size_t open = source.rfind("/*", end - 2);
  if (open == std::string_view::npos || open + 2 >= size ||
      (source[open + 2] != '*' && source[open + 2] != '!')) {
    return {};
  }
  return std::string(source.substr(open, end - open));
}

// The documentation comment of a cursor, parsed; `across_directives` also looks past
// preprocessor lines (for functions, never for enumerators whose neighbour's trailing
// comment would be found).
DocComment doc_of(CXTranslationUnit tu, CXCursor cursor, bool across_directives) {
  std::string raw = take(clang_Cursor_getRawCommentText(cursor));
  if (raw.empty() && across_directives) {
    raw = comment_across_directives(tu, cursor);
  }
  return parse_doc_comment(raw);
}

Param read_param(CXCursor cursor, std::size_t position) {
  Param p;
  p.name = take(clang_getCursorSpelling(cursor));
  if (p.name.empty()) {
    p.name = "arg" + std::to_string(position);
  }
  const CXType type = clang_getCursorType(cursor);
  p.type = tidy_type(take(clang_getTypeSpelling(type)));
  if (type.kind == CXType_Pointer) {
    const CXType pointee = clang_getPointeeType(type);
    p.is_pointer = true;
    p.pointee_const = clang_isConstQualifiedType(pointee) != 0;
    p.pointee = tidy_type(take(clang_getTypeSpelling(clang_getUnqualifiedType(pointee))));
    // Incomplete structs, void and functions have no size: no value can be made of them.
    p.pointee_complete = clang_Type_getSizeOf(pointee) >= 0;
  }
  return p;
}

// Everything collected from one translation unit before it is sorted into headers.
struct Collected {
  struct FunctionEntry {
    Function function;
    std::string forwards_to;  // for static inline forwarders: the called function
    std::string signature;    // canonical function type, "CUresult (CUstream_st *, CUctx_st **)"
  };
  std::vector<FunctionEntry> functions;
  struct EnumEntry {
    Enum e;
    std::string usr;
    bool anonymous = false;
  };
  std::vector<EnumEntry> enums;
  std::unordered_map<std::string, std::string> enum_typedef;  // enum USR → first typedef name
  std::vector<Typedef> typedefs;
  struct Macro {
    std::string name;
    std::vector<std::string> body;
    bool function_like = false;
    std::vector<std::string> params;
    std::string header;
  };
  std::vector<Macro> macros;
  /// cudaTypedefs.h's `typedef R (*PFN_name_vNNNN[_ptds])(...)`: name → canonical
  /// function type of the pointee.
  std::vector<std::pair<std::string, std::string>> pfn_typedefs;
};

// Return the function a static inline forwarder's body calls, or "".
std::string forwarded_call(CXCursor fn) {
  std::string callee;
  std::vector<CXCursor> stack{fn};
  while (!stack.empty() && callee.empty()) {
    CXCursor c = stack.back();
    stack.pop_back();
    visit_children(c, [&](CXCursor child) {
      if (clang_getCursorKind(child) == CXCursor_CallExpr) {
        CXCursor ref = clang_getCursorReferenced(child);
        if (clang_getCursorKind(ref) == CXCursor_FunctionDecl) {
          callee = take(clang_getCursorSpelling(ref));
          return CXChildVisit_Break;
        }
      }
      stack.push_back(child);
      return CXChildVisit_Continue;
    });
  }
  return callee;
}

void collect_function(CXTranslationUnit tu, CXCursor c, const std::string& header, Collected& out) {
  Collected::FunctionEntry entry;
  Function& f = entry.function;
  f.header = header;
  f.symbol = take(clang_getCursorSpelling(c));
  f.name = written_name(tu, c);
  const CXType type = clang_getCursorType(c);
  entry.signature = take(clang_getTypeSpelling(clang_getCanonicalType(type)));
  f.return_type = tidy_type(take(clang_getTypeSpelling(clang_getResultType(type))));
  f.variadic = clang_isFunctionTypeVariadic(type) != 0;
  f.deprecated = clang_getCursorAvailability(c) == CXAvailability_Deprecated;
  const int n = clang_Cursor_getNumArguments(c);
  for (int i = 0; i < n; ++i) {
    f.params.push_back(read_param(clang_Cursor_getArgument(c, static_cast<unsigned>(i)),
                                  static_cast<std::size_t>(i)));
  }
  const DocComment doc = doc_of(tu, c, /*across_directives=*/true);
  f.brief = doc.brief;
  for (auto& p : f.params) {
    for (const auto& d : doc.params) {
      if (d.name == p.name) {
        p.doc = d.text;
        p.direction = d.direction;
      }
    }
  }
  if (clang_isCursorDefinition(c) != 0 && clang_Cursor_getStorageClass(c) == CX_SC_Static) {
    entry.forwards_to = forwarded_call(c);
    if (entry.forwards_to.empty()) {
      // The header's own code (cufile.h's cufileop_status_error), not a library entry point.
      return;
    }
  }
  out.functions.push_back(std::move(entry));
}

void collect_enum(CXTranslationUnit tu, CXCursor c, const std::string& header, Collected& out) {
  if (clang_isCursorDefinition(c) == 0) {
    return;
  }
  Collected::EnumEntry entry;
  entry.usr = take(clang_getCursorUSR(c));
  entry.anonymous = clang_Cursor_isAnonymous(c) != 0;
  entry.e.header = header;
  if (!entry.anonymous) {
    entry.e.name = take(clang_getCursorSpelling(c));
  }
  visit_children(c, [&](CXCursor k) {
    if (clang_getCursorKind(k) == CXCursor_EnumConstantDecl) {
      Enumerator e;
      e.name = take(clang_getCursorSpelling(k));
      e.value = clang_getEnumConstantDeclValue(k);
      e.deprecated = clang_getCursorAvailability(k) == CXAvailability_Deprecated;
      e.doc = doc_of(tu, k, /*across_directives=*/false).brief;
      entry.e.enumerators.push_back(std::move(e));
    }
    return CXChildVisit_Continue;
  });
  out.enums.push_back(std::move(entry));
}

void collect_typedef(CXCursor c, const std::string& header, Collected& out) {
  Typedef t;
  t.name = take(clang_getCursorSpelling(c));
  const CXType underlying = clang_getTypedefDeclUnderlyingType(c);
  t.underlying = tidy_type(take(clang_getTypeSpelling(underlying)));
  t.header = header;
  // `typedef enum X_enum {...} X;` names the enum X; a typedef of that typedef does not.
  const CXCursor decl = clang_getTypeDeclaration(underlying);
  if (clang_getCursorKind(decl) == CXCursor_EnumDecl) {
    out.enum_typedef.emplace(take(clang_getCursorUSR(decl)), t.name);
  }
  out.typedefs.push_back(std::move(t));
}

void collect_macro(CXTranslationUnit tu, CXCursor c, const std::string& header, Collected& out) {
  std::vector<std::string> tokens = tokens_of(tu, clang_getCursorExtent(c));
  if (tokens.empty()) {
    return;
  }
  Collected::Macro m;
  m.name = tokens.front();
  m.header = header;
  m.function_like = clang_Cursor_isMacroFunctionLike(c) != 0;
  std::size_t body = 1;
  if (m.function_like) {
    // name ( p1 , p2 ) body...
    for (body = 2; body < tokens.size() && tokens[body] != ")"; ++body) {
      if (tokens[body] != ",") {
        m.params.push_back(tokens[body]);
      }
    }
    ++body;
  }
  if (body < tokens.size()) {
    m.body.assign(tokens.begin() + static_cast<std::ptrdiff_t>(body), tokens.end());
  }
  out.macros.push_back(std::move(m));
}

// Call `f(cursor, kind)` for every declaration and macro at file scope, looking inside
// `extern "C" { ... }` blocks and namespaces.
template <class F>
void visit_file_scope(CXTranslationUnit tu, F&& f) {
  std::vector<CXCursor> scopes{clang_getTranslationUnitCursor(tu)};
  while (!scopes.empty()) {
    CXCursor scope = scopes.back();
    scopes.pop_back();
    visit_children(scope, [&](CXCursor c) {
      const CXCursorKind kind = clang_getCursorKind(c);
      if (kind == CXCursor_LinkageSpec || kind == CXCursor_Namespace) {
        scopes.push_back(c);
      } else {
        f(c, kind);
      }
      return CXChildVisit_Continue;
    });
  }
}

// Walk the translation unit; `want_declarations` false reads only the #define lines.
Collected collect(CXTranslationUnit tu, const HeaderFiles& files, bool want_declarations) {
  Collected out;
  visit_file_scope(tu, [&](CXCursor c, CXCursorKind kind) {
    const std::string* header = files.header_of(c);
    if (header == nullptr) {
      return;
    }
    if (kind == CXCursor_MacroDefinition) {
      collect_macro(tu, c, *header, out);
    } else if (!want_declarations) {
      return;
    } else if (kind == CXCursor_FunctionDecl) {
      collect_function(tu, c, *header, out);
    } else if (kind == CXCursor_EnumDecl) {
      collect_enum(tu, c, *header, out);
    } else if (kind == CXCursor_TypedefDecl) {
      collect_typedef(c, *header, out);
    }
  });
  return out;
}

// Read cudaTypedefs.h's function-pointer typedefs (`PFN_cuMemAlloc_v3020`), which name
// the CUDA version each driver ABI appeared in.
std::vector<std::pair<std::string, std::string>> collect_pfn_typedefs(CXTranslationUnit tu,
                                                                      CXFile typedefs_file) {
  std::vector<std::pair<std::string, std::string>> out;
  if (typedefs_file == nullptr) {
    return out;
  }
  visit_file_scope(tu, [&](CXCursor c, CXCursorKind kind) {
    if (kind != CXCursor_TypedefDecl) {
      return;
    }
    CXFile file = nullptr;
    clang_getExpansionLocation(clang_getCursorLocation(c), &file, nullptr, nullptr, nullptr);
    std::string name = take(clang_getCursorSpelling(c));
    if (file == nullptr || clang_File_isEqual(file, typedefs_file) == 0 ||
        name.rfind("PFN_", 0) != 0) {
      return;
    }
    const CXType pointer = clang_getCanonicalType(clang_getTypedefDeclUnderlyingType(c));
    if (pointer.kind != CXType_Pointer) {
      return;
    }
    out.emplace_back(std::move(name), take(clang_getTypeSpelling(clang_getPointeeType(pointer))));
  });
  return out;
}

/// The ABI versions cudaTypedefs.h gives one public name: the highest version whose
/// function type equals the header's prototype, for the default and per-thread forms.
struct AbiVersions {
  int version = 0;
  int per_thread_version = 0;
  std::string proc_name;  ///< the PFN base name that matched
};

std::map<std::string, std::vector<std::pair<int, std::pair<bool, std::string>>>> index_pfn(
    const std::vector<std::pair<std::string, std::string>>& typedefs) {
  // PFN_<name>_v<digits>[_ptds|_ptsz] → name → (version, (per_thread, signature))
  static const std::regex kPfn(R"(^PFN_(\w+?)_v(\d+)(_ptds|_ptsz)?$)");
  std::map<std::string, std::vector<std::pair<int, std::pair<bool, std::string>>>> out;
  for (const auto& [name, signature] : typedefs) {
    std::smatch m;
    if (std::regex_match(name, m, kPfn)) {
      out[m[1].str()].push_back({std::stoi(m[2].str()), {m[3].matched, signature}});
    }
  }
  return out;
}

AbiVersions abi_versions_of(
    const std::map<std::string, std::vector<std::pair<int, std::pair<bool, std::string>>>>& pfn,
    const std::string& name, const std::string& signature) {
  AbiVersions v;
  const auto it = pfn.find(name);
  if (it == pfn.end()) {
    return v;
  }
  for (const auto& [version, kind] : it->second) {
    const auto& [per_thread, pfn_signature] = kind;
    if (pfn_signature != signature) {
      continue;
    }
    int& slot = per_thread ? v.per_thread_version : v.version;
    slot = std::max(slot, version);
  }
  if (v.version != 0 || v.per_thread_version != 0) {
    v.proc_name = name;
  }
  return v;
}

// The ABI of a public function, looked up under its own name, then under the base of
// the symbol it is #defined to, then under its own unversioned base.
AbiVersions abi_versions(
    const std::map<std::string, std::vector<std::pair<int, std::pair<bool, std::string>>>>& pfn,
    const Function& f, const std::string& signature) {
  for (const std::string& candidate : {f.name, unversioned(f.symbol), unversioned(f.name)}) {
    AbiVersions v = abi_versions_of(pfn, candidate, signature);
    if (!v.proc_name.empty()) {
      return v;
    }
  }
  return {};
}

// A function-like macro `M(api)` whose body is `api ## suffix` renames to a variant;
// return M → suffix (cuda.h: __CUDA_API_PTDS → "_ptds", __CUDA_API_PTSZ → "_ptsz").
std::map<std::string, std::string> suffix_macros(const std::vector<Collected::Macro>& macros) {
  std::map<std::string, std::string> out;
  for (const auto& m : macros) {
    if (m.function_like && m.params.size() == 1 && m.body.size() == 3 && m.body[0] == m.params[0] &&
        m.body[1] == "##") {
      out[m.name] = m.body[2];
    }
  }
  return out;
}

// Turn `#define name target` and `#define name WRAP(target)` lines into VersionDefines
// for targets that are declared functions.
std::vector<VersionDefine> version_defines(const std::vector<Collected::Macro>& macros,
                                           const std::set<std::string>& symbols) {
  const auto suffixes = suffix_macros(macros);
  std::vector<VersionDefine> out;
  std::set<std::string> seen;
  for (const auto& m : macros) {
    if (m.function_like) {
      continue;
    }
    VersionDefine d;
    d.name = m.name;
    d.header = m.header;
    if (m.body.size() == 1) {
      d.symbol = m.body[0];
    } else if (m.body.size() == 4 && m.body[1] == "(" && m.body[3] == ")" &&
               suffixes.count(m.body[0]) != 0) {
      d.symbol = m.body[2];
      d.per_thread_symbol = m.body[2] + suffixes.at(m.body[0]);
    } else {
      continue;
    }
    if (symbols.count(d.symbol) == 0 || !seen.insert(d.name).second) {
      continue;
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::string include_source(const std::vector<LocatedHeader>& headers) {
  std::string source;
  for (const auto& h : headers) {
    source += "#include \"" + h.path.string() + "\"\n";
  }
  return source;
}

// Find each header of `wanted` through its table row's include directories (a header
// not in the table is looked for in `include_dir` only). A missing optional header is
// left out and named in `omitted`; a missing required one is a MissingInput.
std::vector<LocatedHeader> locate_headers(const std::filesystem::path& include_dir,
                                          const std::vector<std::string>& wanted,
                                          std::vector<std::string>& omitted) {
  std::vector<LocatedHeader> out;
  std::error_code ec;
  for (const auto& h : wanted) {
    const LibraryConfig* config = library_config(h);
    const std::vector<std::string> dirs =
        config != nullptr ? config->include_dirs : std::vector<std::string>{"."};
    std::string looked;
    bool found = false;
    for (const auto& dir :
         config != nullptr && config->extra_headers_only ? std::vector<std::string>{} : dirs) {
      // Absolute: the parse includes it by this path from a file in another directory.
      const std::filesystem::path candidate =
          std::filesystem::absolute(include_dir / dir / h, ec).lexically_normal();
      if (std::filesystem::is_regular_file(candidate, ec)) {
        out.push_back({h, candidate});
        found = true;
        break;
      }
      looked += (looked.empty() ? "" : ", ") + candidate.string();
    }
    // An optional header the toolkit lacks may be in a directory of --extra-headers.
    for (const auto& extra :
         config != nullptr && config->optional ? extra_header_dirs() : std::vector<std::string>{}) {
      const std::filesystem::path candidate =
          std::filesystem::absolute(std::filesystem::path(extra) / h, ec).lexically_normal();
      if (!found && std::filesystem::is_regular_file(candidate, ec)) {
        out.push_back({h, candidate});
        found = true;
      } else if (!found) {
        looked += (looked.empty() ? "" : ", ") + candidate.string();
      }
    }
    if (found) {
      continue;
    }
    if (config != nullptr && config->extra_headers_only && extra_header_dirs().empty()) {
      looked = "only in --extra-headers, none given";
    }
    if (config == nullptr || !config->optional) {
      throw MissingInput("header not found: " + looked);
    }
    std::string note = h;
    note += " not found (looked for " + looked + "): the bindings omit <cuwrap/";
    note += config->ns;
    note += ".hpp>, and calls into " + config->display + " throw LoadError saying so";
    omitted.push_back(std::move(note));
  }
  return out;
}

std::vector<std::string> names_of(const std::vector<LocatedHeader>& headers) {
  std::vector<std::string> out;
  out.reserve(headers.size());
  for (const auto& h : headers) {
    out.push_back(h.name);
  }
  return out;
}

// The search paths of a parse: the include directory, then each header's own.
// Return whether `header` is one whose entry points are libcuda's (cuda.h and the rows
// marked driver_entry_points: cudaGL.h, cudaEGL.h).
bool driver_family(const std::string& header) {
  const LibraryConfig* config = library_config(header);
  return header == "cuda.h" || (config != nullptr && config->driver_entry_points);
}

// Leave out each located header whose system headers (GL/gl.h for cudaGL.h) the compiler
// does not find, naming it in `omitted` as a missing optional header is.
std::vector<LocatedHeader> drop_without_system_headers(CXIndex index,
                                                       const std::filesystem::path& include_dir,
                                                       std::vector<LocatedHeader> located,
                                                       std::vector<std::string>& omitted) {
  std::vector<LocatedHeader> kept;
  for (auto& h : located) {
    const LibraryConfig* config = library_config(h.name);
    if (config == nullptr || config->system_headers.empty()) {
      kept.push_back(std::move(h));
      continue;
    }
    std::string source;
    std::string names;
    for (const auto& system : config->system_headers) {
      source += "#include <" + system + ">\n";
      names += (names.empty() ? "" : ", ") + system;
    }
    try {
      (void)parse_unit(index, include_dir, source, {});
      kept.push_back(std::move(h));
    } catch (const ParseFailure&) {
      omitted.push_back(h.name + " needs " + names +
                        ", which the compiler does not find (Debian: libgl-dev, libegl-dev): "
                        "the bindings omit <cuwrap/" +
                        config->ns + ".hpp>");
    }
  }
  return kept;
}

std::vector<std::string> include_flags(const std::filesystem::path& include_dir,
                                       const std::vector<LocatedHeader>& headers) {
  std::vector<std::string> flags;
  for (const auto& h : headers) {
    const std::string flag = "-I" + h.path.parent_path().string();
    if (h.path.parent_path() != std::filesystem::absolute(include_dir).lexically_normal() &&
        std::find(flags.begin(), flags.end(), flag) == flags.end()) {
      flags.push_back(flag);
    }
  }
  return flags;
}

// Whether a comment line starts a Doxygen block command (\\param, \\return, \\note ...);
// inline commands such as \\c, \\p or \\ref continue the text.
bool is_block_command(const std::string& line) {
  if (line[0] != '\\' && line[0] != '@') {
    return false;
  }
  std::size_t end = 1;
  while (end < line.size() && std::isalpha(static_cast<unsigned char>(line[end])) != 0) {
    ++end;
  }
  static const std::set<std::string, std::less<>> kInline = {"a", "b", "c",   "e",    "em",
                                                             "p", "n", "ref", "link", "endlink"};
  return kInline.count(line.substr(1, end - 1)) == 0;
}

}  // namespace

DocComment parse_doc_comment(const std::string& raw) {
  // Strip the comment markers, keeping one entry per line.
  std::vector<std::string> lines;
  std::istringstream in(raw);
  for (std::string line; std::getline(in, line);) {
    std::string t = trim(line);
    for (const char* open : {"/**<", "/*!<", "///<", "/**", "/*!", "///", "//!", "/*"}) {
      if (t.rfind(open, 0) == 0) {
        t = t.substr(std::char_traits<char>::length(open));
        break;
      }
    }
    if (t.size() >= 2 && t.compare(t.size() - 2, 2, "*/") == 0) {
      t.resize(t.size() - 2);
    }
    while (!t.empty() && t.front() == '*') {
      t.erase(0, 1);
    }
    lines.push_back(trim(t));
  }

  DocComment doc;
  std::string first_paragraph;
  bool in_first_paragraph = true;
  std::string* current = nullptr;  // the brief or \param text being continued
  for (const auto& line : lines) {
    if (line.empty()) {
      current = nullptr;
      if (!first_paragraph.empty()) {
        in_first_paragraph = false;
      }
      continue;
    }
    if (is_block_command(line)) {
      current = nullptr;
      in_first_paragraph = false;
      std::string rest;
      if (line.compare(1, 5, "brief") == 0) {
        doc.brief = trim(line.substr(6));
        current = &doc.brief;
      } else if (line.compare(1, 5, "param") == 0) {
        rest = trim(line.substr(6));
        DocComment::ParamDoc p;
        if (!rest.empty() && rest[0] == '[') {
          const std::size_t close = rest.find(']');
          std::string dir =
              rest.substr(1, close == std::string::npos ? std::string::npos : close - 1);
          std::erase(dir, ' ');
          std::replace(dir.begin(), dir.end(), '/', ',');
          p.direction = dir;
          rest = close == std::string::npos ? std::string() : trim(rest.substr(close + 1));
        }
        std::size_t end = 0;
        while (end < rest.size() &&
               (std::isalnum(static_cast<unsigned char>(rest[end])) != 0 || rest[end] == '_')) {
          ++end;
        }
        p.name = rest.substr(0, end);
        std::string text = trim(rest.substr(end));
        while (!text.empty() && (text[0] == '-' || text[0] == ':')) {
          text = trim(text.substr(1));
        }
        p.text = text;
        doc.params.push_back(std::move(p));
        current = &doc.params.back().text;
      }
      continue;
    }
    if (current == &doc.brief && !doc.brief.empty() &&
        std::isupper(static_cast<unsigned char>(line[0])) != 0 &&
        std::string_view(".:;!?").find(doc.brief.back()) == std::string_view::npos) {
      current = nullptr;  // cuda.h often starts the details without a blank line
      in_first_paragraph = false;
    }
    if (current != nullptr) {
      *current += (current->empty() ? "" : " ") + line;
    } else if (in_first_paragraph) {
      first_paragraph += (first_paragraph.empty() ? "" : " ") + line;
    }
  }
  if (doc.brief.empty()) {
    doc.brief = first_paragraph;
  }
  doc.brief = first_sentence(squeeze(without_link_markers(without_newline_commands(doc.brief))));
  for (auto& p : doc.params) {
    p.text = squeeze(without_link_markers(without_newline_commands(p.text)));
  }
  return doc;
}

namespace {

// A toolkit version as people write it: 12060 → "12.6".
std::string dotted(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// Functions whose first toolkit (added) or first toolkit without them (gone) is known,
// for headers whose table row reads their version so (VersionSource::FunctionMarkers):
// nvrtc.h has no version macro, so these bound its version.
struct FunctionMarker {
  const char* header;
  const char* function;
  int added;  // first toolkit that declares it, 0 if unknown
  int gone;   // first toolkit that no longer declares it, 0 if still there
};
constexpr FunctionMarker kFunctionMarkers[] = {
    // The precompiled-header API, documented "(CUDA 12.8+)" in nvrtc.h.
    {"nvrtc.h", "nvrtcGetPCHHeapSize", 12080, 0},
    // Declared by 12.x's nvrtc.h (deprecated), no longer by 13.0's.
    {"nvrtc.h", "nvrtcGetNVVM", 0, 13000},
};

}  // namespace

namespace {

// The toolkit a header with versioned symbols names (`__nvJitLinkCreate_13_0` → 13000),
// or 0.
int symbol_suffix_version(const Header& header) {
  static const std::regex kVersioned(R"(_(\d+)_(\d+)$)");
  for (const auto& f : header.functions) {
    std::smatch m;
    if (f.inline_forwarder && std::regex_search(f.symbol, m, kVersioned)) {
      return std::stoi(m[1]) * 1000 + std::stoi(m[2]) * 10;
    }
  }
  return 0;
}

// Why a header checked by its functions of known toolkits (and its "(CUDA 12.8+)" notes
// in `text`) is not CUDA `cuda`; "" when nothing says so.
std::string function_marker_mismatch(const Header& header, const std::string& text, int cuda) {
  const auto declares = [&](const std::string& name) {
    return std::any_of(header.functions.begin(), header.functions.end(),
                       [&](const Function& f) { return f.name == name; });
  };
  for (const auto& m : kFunctionMarkers) {
    if (header.file != m.header) {
      continue;
    }
    const bool has = declares(m.function);
    if (m.added != 0 && has && cuda < m.added) {
      return "CUDA " + dotted(m.added) + " or newer (it declares " + m.function + ", added in " +
             dotted(m.added) + ")";
    }
    if (m.added != 0 && !has && cuda >= m.added) {
      return "older than CUDA " + dotted(m.added) + " (it lacks " + m.function + ", added in " +
             dotted(m.added) + ")";
    }
    if (m.gone != 0 && has && cuda >= m.gone) {
      return "older than CUDA " + dotted(m.gone) + " (it declares " + m.function + ", which " +
             dotted(m.gone) + " no longer has)";
    }
  }
  // Its own notes: "\defgroup precompiled_header ... (CUDA 12.8+)".
  static const std::regex kNote(R"(\(CUDA (\d+)\.(\d+)\+\))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kNote);
       it != std::sregex_iterator(); ++it) {
    const int since = std::stoi((*it)[1]) * 1000 + std::stoi((*it)[2]) * 10;
    if (since > cuda) {
      return "CUDA " + dotted(since) + " or newer (it documents " + (*it)[0].str() + ")";
    }
  }
  return {};
}

}  // namespace

void check_one_toolkit(const Api& api, const std::string& nvrtc_text) {
  if (api.find("cuda.h") == nullptr || api.cuda_version == 0) {
    return;  // nothing to compare against
  }
  const int cuda = api.cuda_version;
  std::vector<std::string> mismatches;
  // Each header as its table row says its version can be read.
  for (const auto& header : api.headers) {
    const LibraryConfig* config = library_config(header.file);
    if (config == nullptr) {
      continue;
    }
    switch (config->version_source) {
      case VersionSource::SymbolSuffix:
        if (const int version = symbol_suffix_version(header);
            version != 0 && version / 10 != cuda / 10) {
          for (const auto& f : header.functions) {
            if (f.inline_forwarder) {
              mismatches.push_back(header.file + " is CUDA " + dotted(version) +
                                   " (its symbols are " + f.symbol + "-style)");
              break;
            }
          }
        }
        break;
      case VersionSource::FunctionMarkers:
        if (const std::string why = function_marker_mismatch(
                header, header.file == "nvrtc.h" ? nvrtc_text : std::string(), cuda);
            !why.empty()) {
          mismatches.push_back(header.file + " is " + why);
        }
        break;
      case VersionSource::CudaVersionMacro:  // the reference itself
      case VersionSource::None:              // nothing to read: trusted to be the same toolkit
        break;
    }
  }
  if (mismatches.empty()) {
    return;
  }
  std::string message = "the headers come from different CUDA toolkits: cuda.h is CUDA " +
                        dotted(cuda) + " (CUDA_VERSION " + std::to_string(cuda) + ")";
  for (const auto& m : mismatches) {
    message += ", " + m;
  }
  throw MixedToolkits(message + "; point --cuda-include at one toolkit's include directory");
}

namespace {

// The names a header maps with `#define name target` and binds to the target's
// prototype. A compatibility block (CUDA 13.x's trailing "API versioning support") may
// #undef those names and re-declare the legacy prototypes: under the public name
// (`cuCtxCreate(CUcontext*, unsigned int, CUdevice)` next to `cuCtxCreate_v4`'s) and
// under the targets' own names (`cuMemcpyHtoD_v2`). Neither is what a program calling
// the public name gets, whatever order the declarations come in.
struct MappedNames {
  std::map<std::string, std::string> target_of;  ///< public name → the symbol it is bound to
  std::set<std::string> targets;                 ///< those symbols

  /// Return true when `f` (its symbol resolved through a forwarder) is such a legacy
  /// declaration.
  bool is_legacy(const Function& f) const {
    if (const auto it = target_of.find(f.name); it != target_of.end()) {
      return f.symbol != it->second;
    }
    return f.name == f.symbol && targets.count(f.symbol) != 0;
  }
};

MappedNames mapped_names(const Collected& found, const std::string& header,
                         const std::map<std::string, const VersionDefine*>& define_of) {
  std::set<std::pair<std::string, std::string>> declared;  // (name as written, symbol)
  for (const auto& entry : found.functions) {
    if (entry.function.header == header) {
      declared.emplace(entry.function.name,
                       entry.forwards_to.empty() ? entry.function.symbol : entry.forwards_to);
    }
  }
  MappedNames mapped;
  for (const auto& [name, define] : define_of) {
    // Only where the target is declared under the public name: a define whose target
    // prototype the header lacks leaves the name as it is.
    if (define->symbol != name && declared.count({name, define->symbol}) != 0) {
      mapped.target_of[name] = define->symbol;
      mapped.targets.insert(define->symbol);
    }
  }
  return mapped;
}

}  // namespace

Api parse_headers(const std::filesystem::path& include_dir, const std::vector<std::string>& wanted,
                  AbiSource abi_source) {
  std::error_code ec;
  if (!std::filesystem::is_directory(include_dir, ec)) {
    throw MissingInput("CUDA include directory not found: " + include_dir.string());
  }
  std::vector<std::string> omitted;
  IndexPtr index(clang_createIndex(/*excludeDeclarationsFromPCH=*/0, /*displayDiagnostics=*/0));
  const std::vector<LocatedHeader> located = drop_without_system_headers(
      index.get(), include_dir, locate_headers(include_dir, wanted, omitted), omitted);
  const std::vector<std::string> headers = names_of(located);
  const std::vector<std::string> extra_includes = include_flags(include_dir, located);

  // cudaTypedefs.h tells which driver ABI version each prototype is. Without it the
  // only other source is the versioned names, which the caller must ask for.
  const bool wants_driver = std::find(headers.begin(), headers.end(), "cuda.h") != headers.end();
  const bool has_typedefs = wants_driver && abi_source == AbiSource::Typedefs;
  if (has_typedefs && !std::filesystem::is_regular_file(include_dir / "cudaTypedefs.h", ec)) {
    throw MissingInput(
        "header not found: " + (include_dir / "cudaTypedefs.h").string() +
        " (it gives each driver entry point's ABI version; without it every entry point would "
        "be requested as the headers' CUDA_VERSION and fail on older drivers). Point "
        "--cuda-include at a complete toolkit include directory, or pass --abi-from-defines to "
        "take the versions from cuda.h's versioned names (cuCtxCreate_v4) instead");
  }
  std::string source = include_source(located);
  const std::filesystem::path typedefs = std::filesystem::absolute(include_dir / "cudaTypedefs.h");
  // The other driver headers' ABI versions (cudaGLTypedefs.h next to cudaGL.h, ...).
  std::vector<std::filesystem::path> more_typedefs;
  if (has_typedefs) {
    source += include_source({{"cudaTypedefs.h", typedefs}});
    for (const auto& h : located) {
      const LibraryConfig* config = library_config(h.name);
      if (config == nullptr || config->typedefs_header.empty()) {
        continue;
      }
      const std::filesystem::path path = h.path.parent_path() / config->typedefs_header;
      if (std::filesystem::is_regular_file(path, ec)) {
        source += include_source({{config->typedefs_header, path}});
        more_typedefs.push_back(path);
      }
    }
  }
  UnitPtr unit = parse_unit(index.get(), include_dir, source, extra_includes);
  const HeaderFiles files(unit.get(), located);
  Collected found = collect(unit.get(), files, /*want_declarations=*/true);
  if (has_typedefs) {
    found.pfn_typedefs =
        collect_pfn_typedefs(unit.get(), clang_getFile(unit.get(), typedefs.string().c_str()));
    for (const auto& path : more_typedefs) {
      auto more =
          collect_pfn_typedefs(unit.get(), clang_getFile(unit.get(), path.string().c_str()));
      found.pfn_typedefs.insert(found.pfn_typedefs.end(), more.begin(), more.end());
    }
  }
  const auto pfn = index_pfn(found.pfn_typedefs);

  // Per-thread-default-stream variants are only spelled out when the user asks for them.
  std::vector<Collected::Macro> ptds_macros = found.macros;
  if (std::find(headers.begin(), headers.end(), "cuda.h") != headers.end()) {
    std::vector<LocatedHeader> driver;  // cuda.h, then the driver's other headers
    std::copy_if(located.begin(), located.end(), std::back_inserter(driver),
                 [](const LocatedHeader& h) { return driver_family(h.name); });
    UnitPtr ptds = parse_unit(index.get(), include_dir, include_source(driver),
                              {"-DCUDA_API_PER_THREAD_DEFAULT_STREAM"});
    ptds_macros = collect(ptds.get(), HeaderFiles(ptds.get(), driver), false).macros;
    // The other headers' macros still come from the first parse.
    for (const auto& m : found.macros) {
      if (!driver_family(m.header)) {
        ptds_macros.push_back(m);
      }
    }
  }

  // A static inline forwarder (nvJitLink's `nvJitLinkCreate` calling
  // `__nvJitLinkCreate_13_0`) is the public function; the callee is its symbol.
  std::set<std::string> forwarded;
  for (const auto& entry : found.functions) {
    if (!entry.forwards_to.empty()) {
      forwarded.insert(entry.forwards_to);
    }
  }
  std::set<std::string> symbols;
  for (const auto& entry : found.functions) {
    symbols.insert(entry.function.symbol);
  }
  const std::vector<VersionDefine> defines = version_defines(ptds_macros, symbols);
  std::map<std::string, const VersionDefine*> define_of;
  for (const auto& d : defines) {
    define_of[d.name] = &d;
  }

  Api api;
  for (const auto& m : found.macros) {
    if (m.name == "CUDA_VERSION" && m.body.size() == 1) {
      api.cuda_version = std::stoi(m.body[0]);
    }
  }
  for (const auto& h : headers) {
    Header header;
    header.file = h;
    const MappedNames mapped = mapped_names(found, h, define_of);
    std::set<std::string> seen;
    for (const auto& entry : found.functions) {
      Function f = entry.function;
      if (f.header != h || forwarded.count(f.symbol) != 0) {
        continue;  // another header's, or the versioned target of a forwarder
      }
      if (!entry.forwards_to.empty()) {
        f.symbol = entry.forwards_to;
        f.inline_forwarder = true;
      }
      if (mapped.is_legacy(f)) {
        continue;  // a compatibility block's prototype: not what the public name calls
      }
      if (const auto it = define_of.find(f.name); it != define_of.end()) {
        f.per_thread_symbol = it->second->per_thread_symbol;
      }
      if (driver_family(h) && has_typedefs) {
        const AbiVersions v = abi_versions(pfn, f, entry.signature);
        f.abi_version = v.version;
        f.per_thread_abi_version = v.per_thread_version;
        if (v.proc_name != f.name) {
          f.proc_name = v.proc_name;
        }
        f.abi_version_unknown =
            v.version == 0 || (!f.per_thread_symbol.empty() && v.per_thread_version == 0);
        if (v.version != 0) {
          const LibraryConfig* config = library_config(h);
          f.abi_source = (config != nullptr && !config->typedefs_header.empty()
                              ? config->typedefs_header
                              : std::string("cudaTypedefs.h")) +
                         " PFN_" + v.proc_name + "_v" + std::to_string(v.version);
        }
      }
      if (!seen.insert(f.name).second) {
        continue;  // a redeclaration
      }
      header.functions.push_back(std::move(f));
    }
    for (auto& entry : found.enums) {
      if (entry.e.header != h) {
        continue;
      }
      if (const auto it = found.enum_typedef.find(entry.usr); it != found.enum_typedef.end()) {
        entry.e.name = it->second;
      }
      header.enums.push_back(entry.e);  // anonymous enums without a typedef have no name
    }
    for (const auto& t : found.typedefs) {
      if (t.header == h) {
        header.typedefs.push_back(t);
      }
    }
    for (const auto& d : defines) {
      if (d.header == h) {
        header.defines.push_back(d);
      }
    }
    api.headers.push_back(std::move(header));
  }
  if (wants_driver && !has_typedefs) {
    assign_abi_from_defines(api);
  }
  api.omitted = std::move(omitted);
  std::string nvrtc_text;
  if (const auto it = std::find_if(located.begin(), located.end(),
                                   [](const LocatedHeader& h) { return h.name == "nvrtc.h"; });
      it != located.end()) {
    std::ifstream in(it->path, std::ios::binary);
    nvrtc_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  check_one_toolkit(api, nvrtc_text);
  return api;
}

}  // namespace cuwrap::gen
