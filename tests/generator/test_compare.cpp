// compare.cpp on reports of hand-built models (no libclang): each kind of change is
// found and only it; a report of another format version, a missing or garbled report
// file are errors naming the path (and both versions); the classification list.
#include "compare.hpp"
#include "model_builders.hpp"
#include "report.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace cuwrap::gen {
namespace {

using testing::function;
using testing::has;
using testing::marked;
using testing::pointer;
using testing::value;

// The old side: a getter, a keyed attribute getter, a function that later loses its
// ABI version, one that changes signature, one that is removed and one that falls to
// raw-only; an attribute enum and an enum that goes away.
Api old_api() {
  Api api;
  api.cuda_version = 12060;
  Header cuda;
  cuda.file = "cuda.h";
  Function ctx = function("cuStreamGetCtx", {value("CUstream", "hStream"),
                                             pointer("CUcontext", "pctx", "Returned context")});
  ctx.abi_version = 9020;
  Function attr = function("cuFooGetAttribute", {pointer("void", "value", "Returned value"),
                                                 value("CUfoo_attribute", "attrib")});
  Function gone = function("cuGone", {value("int", "x")});
  Function state = function(
      "cuThingGetState", {pointer("CUthingState", "state", "Returned state"), value("int", "x")});
  Function info = function("cuMemGetInfo", {pointer("size_t", "free", "Returned free memory"),
                                            pointer("size_t", "total", "Returned total memory")});
  cuda.functions = {ctx, attr, gone, state, info};
  cuda.enums.push_back({"CUfoo_attribute",
                        {{"CU_FOO_ATTRIBUTE_SIZE", 0, "Size of it (value type = int)", false},
                         {"CU_FOO_ATTRIBUTE_OLD", 1, "Old one (value type = int)", false}},
                        "cuda.h"});
  cuda.enums.push_back({"CUgone", {{"CU_GONE_A", 0, "", false}}, "cuda.h"});
  api.headers.push_back(cuda);
  return api;
}

// The new side: cuStreamGetCtx gains a parameter and a new ABI version, the attribute's
// value type widens, an enumerator and an enum come and go, cuGone goes, cuNew comes
// (typed from its documentation only), cuThingGetState's output type becomes incomplete.
Api new_api() {
  Api api;
  api.cuda_version = 13000;
  Header cuda;
  cuda.file = "cuda.h";
  Function ctx =
      function("cuStreamGetCtx",
               {value("CUstream", "hStream"), pointer("CUcontext", "pctx", "Returned context"),
                pointer("CUgreenCtx", "pGreenCtx", "Returned green context")});
  ctx.abi_version = 12050;
  ctx.symbol = "cuStreamGetCtx_v2";
  Function attr = function("cuFooGetAttribute", {pointer("void", "value", "Returned value"),
                                                 value("CUfoo_attribute", "attrib")});
  Function added =
      function("cuNew", {value("int", "x"), pointer("int", "result", "Returned result")});
  Function state = function(
      "cuThingGetState",
      {pointer("CUthingState", "state", "Returned state", false, false), value("int", "x")});
  Function info = function("cuMemGetInfo", {pointer("size_t", "free", "Returned free memory"),
                                            pointer("size_t", "total", "Returned total memory")});
  cuda.functions = {ctx, attr, added, state, info};
  cuda.enums.push_back({"CUfoo_attribute",
                        {{"CU_FOO_ATTRIBUTE_SIZE", 0, "Size of it (value type = size_t)", false},
                         {"CU_FOO_ATTRIBUTE_NEW", 2, "New one", false}},
                        "cuda.h"});
  cuda.enums.push_back({"CUnew", {{"CU_NEW_A", 0, "", false}}, "cuda.h"});
  api.headers.push_back(cuda);
  return api;
}

nlohmann::json compare_models(const Api& before, const Api& after) {
  return compare_reports(report_json(make_plan(before)), report_json(make_plan(after)), "old",
                         "new");
}

// The names in comparison list `key`.
std::vector<std::string> names(const nlohmann::json& c, const char* key,
                               const char* field = "name") {
  std::vector<std::string> out;
  for (const auto& e : c[key]) {
    out.push_back(e[field].get<std::string>());
  }
  return out;
}

using Names = std::vector<std::string>;

TEST(Compare, FindsEachKindOfChange) {
  const auto c = compare_models(old_api(), new_api());
  EXPECT_EQ(c["format_version"], kReportFormatVersion);
  EXPECT_EQ(c["old"]["cuda_version"], 12060);
  EXPECT_EQ(c["new"]["cuda_version"], 13000);
  EXPECT_EQ(names(c, "functions_added"), Names{"cuNew"});
  EXPECT_EQ(names(c, "functions_removed"), Names{"cuGone"});
  EXPECT_EQ(names(c, "signatures_changed"), Names{"cuStreamGetCtx"});
  EXPECT_EQ(c["signatures_changed"][0]["old"],
            "CUresult cuStreamGetCtx(CUstream hStream, CUcontext* pctx)");
  EXPECT_EQ(c["signatures_changed"][0]["new"],
            "CUresult cuStreamGetCtx(CUstream hStream, CUcontext* pctx, CUgreenCtx* pGreenCtx)");
  // cuMemGetInfo is the same on both sides: in no list.
  EXPECT_EQ(names(c, "typed_forms_changed"), (Names{"cuStreamGetCtx", "cuThingGetState"}));
  EXPECT_EQ(c["typed_forms_changed"][0]["old"], "value in(hStream: CUstream) out(pctx: CUcontext)");
  EXPECT_EQ(c["typed_forms_changed"][0]["new"],
            "aggregate in(hStream: CUstream) out(pctx: CUcontext, pGreenCtx: CUgreenCtx)");
  EXPECT_EQ(names(c, "abi_versions_changed"), Names{"cuStreamGetCtx"});
  EXPECT_EQ(c["abi_versions_changed"][0]["old"], "cuStreamGetCtx (ABI 9020)");
  EXPECT_EQ(c["abi_versions_changed"][0]["new"], "cuStreamGetCtx_v2 (ABI 12050)");
  EXPECT_EQ(names(c, "enums_added"), Names{"CUnew"});
  EXPECT_EQ(names(c, "enums_removed"), Names{"CUgone"});
  EXPECT_EQ(names(c, "enumerators_added"), Names{"CU_FOO_ATTRIBUTE_NEW"});
  EXPECT_EQ(names(c, "enumerators_removed"), Names{"CU_FOO_ATTRIBUTE_OLD"});
  ASSERT_EQ(names(c, "attribute_value_types_changed", "enumerator"),
            (Names{"CU_FOO_ATTRIBUTE_OLD", "CU_FOO_ATTRIBUTE_SIZE"}));
  EXPECT_EQ(c["attribute_value_types_changed"][0]["old"], "int");
  EXPECT_TRUE(c["attribute_value_types_changed"][0]["new"].is_null());
  EXPECT_EQ(c["attribute_value_types_changed"][1]["enum"], "CUfoo_attribute");
  EXPECT_EQ(c["attribute_value_types_changed"][1]["old"], "int");
  EXPECT_EQ(c["attribute_value_types_changed"][1]["new"], "size_t");
  ASSERT_EQ(names(c, "fell_to_raw_only"), Names{"cuThingGetState"});
  EXPECT_TRUE(has(c["fell_to_raw_only"][0]["reason"], "incomplete type 'CUthingState'"));
  // The changed functions whose classification the parameters' text decided: without
  // it cuNew's `result` (no Get/Create in the name) and cuStreamGetCtx's `pctx` (not
  // first) would be inputs, and cuThingGetState's `state` would not make it raw-only.
  // cuMemGetInfo's `total` is decided so too, but cuMemGetInfo did not change.
  ASSERT_EQ(names(c, "to_review"), (Names{"cuStreamGetCtx", "cuNew", "cuThingGetState"}));
  EXPECT_EQ(c["to_review"][1]["decisions"][0]["param"], "result");
  EXPECT_TRUE(has(c["to_review"][1]["decisions"][0]["rule"], "documented as written by the call"));
  EXPECT_EQ(c["to_review"][2]["decisions"][0]["param"], "state");
  for (const auto& [key, n] : c["summary"].items()) {
    EXPECT_EQ(n, c[key].size()) << key;
  }
}

TEST(Compare, AReportComparedWithItselfHasNoChange) {
  const auto c = compare_models(new_api(), new_api());
  for (const auto& [key, n] : c["summary"].items()) {
    EXPECT_EQ(n, 0) << key;
  }
  EXPECT_EQ(comparison_summary(c),
            "CUDA 13.0 -> CUDA 13.0: 0 functions added, 0 functions removed, 0 C signatures "
            "changed, 0 typed forms changed, 0 ABI versions changed, 0 enums added, 0 enums "
            "removed, 0 enumerators added, 0 enumerators removed, 0 attribute value types "
            "changed, 0 fell to raw-only, 0 changed functions to review");
}

TEST(Compare, MarkdownHasTheCountsAndOneSectionPerKind) {
  const auto md = comparison_markdown(compare_models(old_api(), new_api()));
  EXPECT_TRUE(has(md, "# cuwrap-gen comparison: CUDA 12.6 → CUDA 13.0\n")) << md;
  EXPECT_TRUE(has(md, "| functions added | 1 |\n")) << md;
  EXPECT_TRUE(has(md, "| enums removed | 1 |\n")) << md;
  EXPECT_TRUE(
      has(md, "## Functions added\n\n- `cuNew` (cuda.h): `CUresult cuNew(int x, int* result)`"))
      << md;
  EXPECT_TRUE(has(md, "## C signatures changed\n")) << md;
  EXPECT_TRUE(has(md, "- `CU_FOO_ATTRIBUTE_SIZE` (CUfoo_attribute): `int` → `size_t`")) << md;
  EXPECT_TRUE(has(md, "- `CU_FOO_ATTRIBUTE_OLD` (CUfoo_attribute): `int` → untyped")) << md;
  EXPECT_TRUE(
      has(md, "## Fell to raw-only\n\n- `cuThingGetState` (cuda.h): output parameter 'state'"))
      << md;
  EXPECT_TRUE(has(md, "## Changed functions to review")) << md;
  // No change of a kind: no section for it.
  EXPECT_FALSE(has(md, "## Enumerators added\n\n- `CUfoo_attribute::CU_FOO_ATTRIBUTE_OLD")) << md;
  const auto same = comparison_markdown(compare_models(old_api(), old_api()));
  EXPECT_FALSE(has(same, "\n## ")) << same;
}

// A header in one report only (nvvm.h, which a set of headers may lack) is named as not
// compared; its functions and enums are neither added nor removed, and the headers both
// reports have are still compared.
TEST(Compare, AHeaderInOneReportOnlyIsNamedNotCompared) {
  Api with_nvvm = new_api();
  Header nvvm;
  nvvm.file = "nvvm.h";
  nvvm.functions = {function("nvvmVersion", {pointer("int", "major", "Returned major"),
                                             pointer("int", "minor", "Returned minor")})};
  nvvm.enums.push_back({"nvvmResult", {{"NVVM_SUCCESS", 0, "", false}}, "nvvm.h"});
  with_nvvm.headers.push_back(nvvm);
  const auto c = compare_models(old_api(), with_nvvm);
  EXPECT_EQ(c["headers_only_in_new"], nlohmann::json::array({"nvvm.h"}));
  EXPECT_EQ(c["headers_only_in_old"], nlohmann::json::array());
  EXPECT_EQ(names(c, "functions_added"), Names{"cuNew"});
  EXPECT_EQ(names(c, "enums_added"), Names{"CUnew"});
  EXPECT_EQ(names(c, "functions_removed"), Names{"cuGone"});
  const std::string summary = comparison_summary(c);
  const std::string tail =
      "changed functions to review; not compared, in the CUDA 13.0 headers only: nvvm.h";
  EXPECT_EQ(summary.substr(summary.size() - std::min(summary.size(), tail.size())), tail)
      << summary;
  EXPECT_TRUE(
      has(comparison_markdown(c), "\nNot compared, in the CUDA 13.0 headers only: nvvm.h ("))
      << comparison_markdown(c);
  // The other way round: in the old headers only; removed nothing of it.
  const auto back = compare_models(with_nvvm, old_api());
  EXPECT_EQ(back["headers_only_in_old"], nlohmann::json::array({"nvvm.h"}));
  EXPECT_EQ(names(back, "functions_removed"), Names{"cuNew"});
  EXPECT_EQ(names(back, "enums_removed"), Names{"CUnew"});
  EXPECT_TRUE(
      has(comparison_summary(back), "; not compared, in the CUDA 13.0 headers only: nvvm.h"))
      << comparison_summary(back);
  // The same headers on both sides: nothing said.
  EXPECT_FALSE(has(comparison_summary(compare_models(old_api(), new_api())), "not compared"));
  EXPECT_FALSE(has(comparison_markdown(compare_models(old_api(), new_api())), "Not compared"));
}

TEST(Compare, ReportOfAnotherFormatVersionIsRefusedNamingBoth) {
  auto report = report_json(make_plan(old_api()));
  EXPECT_NO_THROW(check_report(report, "old.json"));
  report["format_version"] = kReportFormatVersion + 1;
  try {
    check_report(report, "old.json");
    FAIL() << "accepted format version " << kReportFormatVersion + 1;
  } catch (const ReportError& e) {
    EXPECT_TRUE(has(e.what(), "old.json is a report of format version " +
                                  std::to_string(kReportFormatVersion + 1)))
        << e.what();
    EXPECT_TRUE(has(e.what(),
                    "this cuwrap-gen reads format version " + std::to_string(kReportFormatVersion)))
        << e.what();
    EXPECT_FALSE(e.missing());
  }
  // The first reports had no format_version: they are version 1.
  report.erase("format_version");
  try {
    check_report(report, "first.json");
    FAIL() << "accepted a report without format_version";
  } catch (const ReportError& e) {
    EXPECT_TRUE(
        has(e.what(), "first.json is a report of format version 1 (it has no \"format_version\")"))
        << e.what();
  }
  EXPECT_THROW(check_report(nlohmann::json::array(), "list.json"), ReportError);
}

TEST(Compare, MissingOrGarbledReportFileNamesThePath) {
  testing::ScratchDir dir;
  const auto missing = dir.path() / "none.json";
  try {
    read_report(missing);
    FAIL() << "read a missing report";
  } catch (const ReportError& e) {
    EXPECT_TRUE(e.missing());
    EXPECT_TRUE(has(e.what(), "report not found: " + missing.string())) << e.what();
  }
  const auto garbled = dir.path() / "garbled.json";
  std::ofstream(garbled) << "{\"format_version\": 2, \"headers\": [";
  try {
    read_report(garbled);
    FAIL() << "read a garbled report";
  } catch (const ReportError& e) {
    EXPECT_FALSE(e.missing());
    EXPECT_TRUE(has(e.what(), garbled.string() + " is not a cuwrap-gen report (not JSON"))
        << e.what();
  }
  const auto good = dir.path() / "good.json";
  std::ofstream(good) << report_json(make_plan(old_api())).dump(2);
  EXPECT_EQ(read_report(good)["cuda_version"], 12060);
}

// The classification list: one line per function with its shape, inputs and outputs
// and the second form's roles; raw-only with its reason.
TEST(Compare, ClassificationListsEveryFunction) {
  const auto report = report_json(make_plan(new_api()));
  const std::string text = classification_text(report);
  EXPECT_TRUE(has(text, "\ncuda.h cuMemGetInfo: aggregate in() out(free: size_t, total: size_t)\n"))
      << text;
  EXPECT_TRUE(has(text,
                  "\ncuda.h cuThingGetState: raw-only (output parameter 'state' points to "
                  "incomplete type 'CUthingState')\n"))
      << text;
  EXPECT_TRUE(has(text,
                  "\ncuda.h cuFooGetAttribute: void in(value: void*, attrib: CUfoo_attribute) "
                  "out(); second typed attribute in(attrib: template key CUfoo_attribute) "
                  "out(value: keyed value void*)\n"))
      << text;
  EXPECT_TRUE(has(text, "CUDA_VERSION 13000")) << text;
}

}  // namespace
}  // namespace cuwrap::gen
