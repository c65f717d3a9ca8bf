// Stage 6: report → comparison. See compare.hpp.
#include "compare.hpp"

#include "report.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

namespace cuwrap::gen {
namespace {

// The kinds of change, in the order the summary and the Markdown give them: the JSON
// key of the list (and of its count in "summary") and how the summary names it.
struct Kind {
  const char* key;
  const char* label;
};
constexpr Kind kKinds[] = {
    {"functions_added", "functions added"},
    {"functions_removed", "functions removed"},
    {"signatures_changed", "C signatures changed"},
    {"typed_forms_changed", "typed forms changed"},
    {"abi_versions_changed", "ABI versions changed"},
    {"enums_added", "enums added"},
    {"enums_removed", "enums removed"},
    {"enumerators_added", "enumerators added"},
    {"enumerators_removed", "enumerators removed"},
    {"attribute_value_types_changed", "attribute value types changed"},
    {"fell_to_raw_only", "fell to raw-only"},
    {"to_review", "changed functions to review"},
};

std::string str(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The array `j[key]`, or an empty one (a reference: entries are kept by address).
const nlohmann::json& array_at(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : kEmpty;
}

// "13.0" for 13000; "?" when the report has none.
std::string version_text(const nlohmann::json& report) {
  const int v = report.value("cuda_version", 0);
  return v == 0 ? std::string("?") : std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// `CUresult cuFoo(CUstream hStream, int* value)`: the C signature of a report entry.
std::string signature(const nlohmann::json& f) {
  std::string out = str(f, "return_type") + " " + str(f, "name") + "(";
  bool first = true;
  for (const auto& p : array_at(f, "params")) {
    out += first ? "" : ", ";
    out += str(p, "type") + " " + str(p, "name");
    first = false;
  }
  if (f.value("variadic", false)) {
    out += first ? "..." : ", ...";
  }
  return out + ")";
}

// `cuStreamGetCtx_v2 (ABI 12050; per-thread cuX_ptsz, ABI 12050)`: what the loader asks for.
std::string abi_text(const nlohmann::json& f) {
  std::string out = str(f, "symbol") + " (ABI " + std::to_string(f.value("abi_version", 0));
  if (const std::string pt = str(f, "per_thread_symbol"); !pt.empty()) {
    out += "; per-thread " + pt + ", ABI " + std::to_string(f.value("per_thread_abi_version", 0));
  }
  return out + ")";
}

bool raw_only(const nlohmann::json& f) { return str(f, "shape") == "raw-only"; }

// The headers a report covers, in report order.
std::vector<std::string> headers_of(const nlohmann::json& report) {
  std::vector<std::string> out;
  for (const auto& h : array_at(report, "headers")) {
    out.push_back(str(h, "header"));
  }
  return out;
}

// Every function of a report by (header, name), in report order; the headers in `skip`
// are left out.
using Key = std::pair<std::string, std::string>;
struct Functions {
  std::vector<Key> order;
  std::map<Key, const nlohmann::json*> by_key;
};
Functions functions_of(const nlohmann::json& report, const std::set<std::string>& skip) {
  Functions out;
  for (const auto& h : array_at(report, "headers")) {
    if (skip.count(str(h, "header")) != 0) {
      continue;
    }
    for (const auto& f : array_at(h, "functions")) {
      Key key{str(h, "header"), str(f, "name")};
      if (out.by_key.emplace(key, &f).second) {
        out.order.push_back(key);
      }
    }
  }
  return out;
}

// Every enum of a report by (header, name) → its enumerators, in report order; the
// headers in `skip` are left out.
struct Enums {
  std::vector<Key> order;
  std::map<Key, std::vector<std::string>> by_key;
  std::map<std::string, std::string> enum_of;  // enumerator → its enum
};
Enums enums_of(const nlohmann::json& report, const std::set<std::string>& skip) {
  Enums out;
  for (const auto& h : array_at(report, "headers")) {
    if (skip.count(str(h, "header")) != 0) {
      continue;
    }
    for (const auto& e : array_at(h, "enums")) {
      Key key{str(h, "header"), str(e, "name")};
      auto names = e.value("enumerators", std::vector<std::string>());
      for (const auto& n : names) {
        out.enum_of.emplace(n, key.second);
      }
      if (out.by_key.emplace(key, std::move(names)).second) {
        out.order.push_back(key);
      }
    }
  }
  return out;
}

// The value type of every typed attribute: the keyed forms' value types and the
// attribute lists' accessor types, by enumerator (the keyed forms of the headers in
// `skip` left out).
std::map<std::string, std::string> value_types_of(const nlohmann::json& report,
                                                  const std::set<std::string>& skip) {
  std::map<std::string, std::string> out;
  for (const auto& list : array_at(report, "attribute_lists")) {
    for (const auto& e : array_at(list, "entries")) {
      out[str(e, "enumerator")] = str(e, "type");
    }
  }
  for (const auto& h : array_at(report, "headers")) {
    if (skip.count(str(h, "header")) != 0) {
      continue;
    }
    for (const auto& f : array_at(h, "functions")) {
      const auto second = f.find("second_form");
      if (second == f.end() || !second->contains("value_types")) {
        continue;
      }
      for (const auto& [k, t] : (*second)["value_types"].items()) {
        out[k] = t.get<std::string>();
      }
    }
  }
  return out;
}

nlohmann::json side(const nlohmann::json& report, const std::string& source) {
  return {{"cuda_version", report.value("cuda_version", 0)}, {"source", source}};
}

nlohmann::json or_null(const std::string& s) {
  return s.empty() ? nlohmann::json() : nlohmann::json(s);
}

}  // namespace

void check_report(const nlohmann::json& report, const std::string& source) {
  if (!report.is_object() || !report.contains("headers") || !report["headers"].is_array()) {
    throw ReportError(source + " is not a cuwrap-gen report (a JSON object with \"headers\")",
                      false);
  }
  const auto it = report.find("format_version");
  const int version = it != report.end() && it->is_number_integer() ? it->get<int>() : 1;
  if (version != kReportFormatVersion) {
    throw ReportError(source + " is a report of format version " + std::to_string(version) +
                          (it == report.end() ? " (it has no \"format_version\")" : "") +
                          "; this cuwrap-gen reads format version " +
                          std::to_string(kReportFormatVersion) +
                          ". Write it again with this cuwrap-gen (--report), or compare with "
                          "the include directory it was made from",
                      false);
  }
}

nlohmann::json read_report(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw ReportError("report not found: " + path.string(), true);
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    throw ReportError("cannot read report " + path.string(), false);
  }
  nlohmann::json report;
  try {
    report = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw ReportError(path.string() + " is not a cuwrap-gen report (not JSON: " + e.what() + ")",
                      false);
  }
  check_report(report, path.string());
  return report;
}

nlohmann::json compare_reports(const nlohmann::json& old_report, const nlohmann::json& new_report,
                               const std::string& old_source, const std::string& new_source) {
  nlohmann::json out = {{"format_version", kReportFormatVersion},
                        {"old", side(old_report, old_source)},
                        {"new", side(new_report, new_source)}};
  for (const auto& kind : kKinds) {
    out[kind.key] = nlohmann::json::array();
  }
  // A header in one report only (nvvm.h where one set of headers lacks it) is not
  // compared: the other report cannot tell whether its toolkit lacks the library or
  // the header was not found, so its functions are neither added nor removed.
  const auto old_headers = headers_of(old_report);
  const auto new_headers = headers_of(new_report);
  std::set<std::string> one_sided;
  out["headers_only_in_old"] = nlohmann::json::array();
  out["headers_only_in_new"] = nlohmann::json::array();
  for (const auto& [mine, theirs, key] :
       {std::tuple{&old_headers, &new_headers, "headers_only_in_old"},
        std::tuple{&new_headers, &old_headers, "headers_only_in_new"}}) {
    for (const auto& h : *mine) {
      if (std::find(theirs->begin(), theirs->end(), h) == theirs->end()) {
        out[key].push_back(h);
        one_sided.insert(h);
      }
    }
  }
  const Functions before = functions_of(old_report, one_sided);
  const Functions after = functions_of(new_report, one_sided);
  for (const auto& key : before.order) {
    if (after.by_key.count(key) == 0) {
      const auto& f = *before.by_key.at(key);
      out["functions_removed"].push_back(
          {{"header", key.first}, {"name", key.second}, {"signature", signature(f)}});
    }
  }
  for (const auto& key : after.order) {
    const nlohmann::json& f = *after.by_key.at(key);
    const auto was = before.by_key.find(key);
    const bool added = was == before.by_key.end();
    bool changed = added;
    if (added) {
      out["functions_added"].push_back({{"header", key.first},
                                        {"name", key.second},
                                        {"signature", signature(f)},
                                        {"classification", classification_line(f)}});
    } else {
      const nlohmann::json& o = *was->second;
      if (signature(o) != signature(f)) {
        out["signatures_changed"].push_back({{"header", key.first},
                                             {"name", key.second},
                                             {"old", signature(o)},
                                             {"new", signature(f)}});
      }
      if (classification_line(o) != classification_line(f)) {
        changed = true;
        out["typed_forms_changed"].push_back({{"header", key.first},
                                              {"name", key.second},
                                              {"old", classification_line(o)},
                                              {"new", classification_line(f)}});
      }
      if (abi_text(o) != abi_text(f)) {
        out["abi_versions_changed"].push_back({{"header", key.first},
                                               {"name", key.second},
                                               {"old", abi_text(o)},
                                               {"new", abi_text(f)}});
      }
    }
    if (raw_only(f) && (added || !raw_only(*was->second))) {
      out["fell_to_raw_only"].push_back({{"header", key.first},
                                         {"name", key.second},
                                         {"added", added},
                                         {"reason", str(f, "raw_only_reason")}});
    }
    if (changed && f.contains("to_review")) {
      out["to_review"].push_back(
          {{"header", key.first}, {"name", key.second}, {"decisions", f["to_review"]}});
    }
  }
  const Enums old_enums = enums_of(old_report, one_sided);
  const Enums new_enums = enums_of(new_report, one_sided);
  for (const auto& key : old_enums.order) {
    if (new_enums.by_key.count(key) == 0) {
      out["enums_removed"].push_back({{"header", key.first}, {"name", key.second}});
    }
  }
  for (const auto& key : new_enums.order) {
    const auto was = old_enums.by_key.find(key);
    if (was == old_enums.by_key.end()) {
      out["enums_added"].push_back({{"header", key.first}, {"name", key.second}});
      continue;
    }
    const auto& now = new_enums.by_key.at(key);
    const std::set<std::string> old_names(was->second.begin(), was->second.end());
    const std::set<std::string> new_names(now.begin(), now.end());
    for (const auto& n : now) {
      if (old_names.count(n) == 0) {
        out["enumerators_added"].push_back(
            {{"header", key.first}, {"enum", key.second}, {"name", n}});
      }
    }
    for (const auto& n : was->second) {
      if (new_names.count(n) == 0) {
        out["enumerators_removed"].push_back(
            {{"header", key.first}, {"enum", key.second}, {"name", n}});
      }
    }
  }
  const auto old_types = value_types_of(old_report, one_sided);
  const auto new_types = value_types_of(new_report, one_sided);
  std::set<std::string> attributes;
  for (const auto* types : {&old_types, &new_types}) {
    for (const auto& [k, t] : *types) {
      attributes.insert(k);
    }
  }
  for (const auto& k : attributes) {
    const auto o = old_types.find(k);
    const auto n = new_types.find(k);
    const std::string ot = o == old_types.end() ? std::string() : o->second;
    const std::string nt = n == new_types.end() ? std::string() : n->second;
    if (ot != nt) {
      const auto e = new_enums.enum_of.count(k) != 0   ? new_enums.enum_of.at(k)
                     : old_enums.enum_of.count(k) != 0 ? old_enums.enum_of.at(k)
                                                       : std::string();
      out["attribute_value_types_changed"].push_back(
          {{"enum", e}, {"enumerator", k}, {"old", or_null(ot)}, {"new", or_null(nt)}});
    }
  }
  nlohmann::json summary = nlohmann::json::object();
  for (const auto& kind : kKinds) {
    summary[kind.key] = out[kind.key].size();
  }
  out["summary"] = summary;
  return out;
}

namespace {

// "; not compared, in the CUDA 13.0 headers only: nvvm.h", or "" when both reports
// cover the same headers.
std::string one_sided_text(const nlohmann::json& c) {
  std::string out;
  for (const auto& [key, side] :
       {std::pair{"headers_only_in_old", "old"}, std::pair{"headers_only_in_new", "new"}}) {
    const auto& headers = array_at(c, key);
    if (headers.empty()) {
      continue;
    }
    out += "; not compared, in the CUDA " + version_text(c[side]) + " headers only:";
    bool first = true;
    for (const auto& h : headers) {
      out += (first ? " " : ", ") + h.get<std::string>();
      first = false;
    }
  }
  return out;
}

}  // namespace

std::string comparison_summary(const nlohmann::json& c) {
  std::string out = "CUDA " + version_text(c["old"]) + " -> CUDA " + version_text(c["new"]) + ":";
  bool first = true;
  for (const auto& kind : kKinds) {
    out +=
        (first ? " " : ", ") + std::to_string(c["summary"].value(kind.key, 0)) + " " + kind.label;
    first = false;
  }
  return out + one_sided_text(c);
}

std::string comparison_markdown(const nlohmann::json& c) {
  std::ostringstream md;
  md << "# cuwrap-gen comparison: CUDA " << version_text(c["old"]) << " → CUDA "
     << version_text(c["new"]) << "\n\n"
     << "| change | count |\n|---|---|\n";
  for (const auto& kind : kKinds) {
    md << "| " << kind.label << " | " << c["summary"].value(kind.key, 0) << " |\n";
  }
  if (const std::string one_sided = one_sided_text(c); !one_sided.empty()) {
    // "; not compared, ..." as a sentence of its own.
    md << "\nN" << one_sided.substr(3)
       << " (the other set of headers has no such header, so nothing of it is counted as "
          "added or removed).\n";
  }
  const auto section = [&](const char* key, const char* title, auto&& line) {
    if (c[key].empty()) {
      return;
    }
    md << "\n## " << title << "\n\n";
    for (const auto& e : c[key]) {
      md << "- " << line(e) << "\n";
    }
  };
  const auto fn = [](const nlohmann::json& e) {
    return "`" + str(e, "name") + "` (" + str(e, "header") + ")";
  };
  section("functions_added", "Functions added", [&](const nlohmann::json& e) {
    return fn(e) + ": `" + str(e, "signature") + "` → " + str(e, "classification");
  });
  section("functions_removed", "Functions removed",
          [&](const nlohmann::json& e) { return fn(e) + ": `" + str(e, "signature") + "`"; });
  section("signatures_changed", "C signatures changed", [&](const nlohmann::json& e) {
    return fn(e) + ": `" + str(e, "old") + "` → `" + str(e, "new") + "`";
  });
  section("typed_forms_changed", "Typed forms changed", [&](const nlohmann::json& e) {
    return fn(e) + ":\n  - old: " + str(e, "old") + "\n  - new: " + str(e, "new");
  });
  section("abi_versions_changed", "ABI versions changed", [&](const nlohmann::json& e) {
    return fn(e) + ": " + str(e, "old") + " → " + str(e, "new");
  });
  section("enums_added", "Enums added", fn);
  section("enums_removed", "Enums removed", fn);
  section("enumerators_added", "Enumerators added", [](const nlohmann::json& e) {
    return "`" + str(e, "enum") + "::" + str(e, "name") + "`";
  });
  section("enumerators_removed", "Enumerators removed", [](const nlohmann::json& e) {
    return "`" + str(e, "enum") + "::" + str(e, "name") + "`";
  });
  section("attribute_value_types_changed", "Attribute value types changed",
          [](const nlohmann::json& e) {
            const auto type = [](const nlohmann::json& t) {
              return t.is_string() ? "`" + t.get<std::string>() + "`" : std::string("untyped");
            };
            return "`" + str(e, "enumerator") + "` (" + str(e, "enum") + "): " + type(e["old"]) +
                   " → " + type(e["new"]);
          });
  section("fell_to_raw_only", "Fell to raw-only", [&](const nlohmann::json& e) {
    return fn(e) + (e.value("added", false) ? " (new)" : "") + ": " + str(e, "reason");
  });
  section("to_review", "Changed functions to review (classified from their documentation)",
          [&](const nlohmann::json& e) {
            std::string line = fn(e) + ":";
            for (const auto& d : e["decisions"]) {
              line += "\n  - " +
                      (str(d, "param").empty() ? std::string() : "`" + str(d, "param") + "`: ") +
                      str(d, "rule");
            }
            return line;
          });
  return md.str();
}

}  // namespace cuwrap::gen
