// The interposer (libcuwrap_interposer) on a fake driver, without a GPU: fault
// injection, live-handle counting, tracing, older-driver emulation, and the
// release-failure handler fed by an injected failure. Each scenario runs
// interposer_client in a fresh process (the loader opens libcuda once per process).
#include <gtest/gtest.h>

#include <cuda.h>
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A fresh directory for one test's files, removed afterwards.
class Scratch {
 public:
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "cuwrap-interposer-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

struct ClientRun {
  int status = -1;
  std::string out;     // the client's stdout
  std::string err;     // its stderr
  std::string report;  // CUWRAP_HANDLE_REPORT
  std::string trace;   // CUWRAP_TRACE_FILE, when asked for
};

// ClientRun `scenario` of interposer_client through the interposer with `env` added.
ClientRun run_client(const std::string& scenario,
                     const std::map<std::string, std::string>& env = {}, bool trace = false) {
  Scratch dir;
  std::string command = "env CUWRAP_LIBCUDA='" CUWRAP_INTERPOSER_PATH
                        "' CUWRAP_INTERPOSER_LIBCUDA='" CUWRAP_FAKE_DRIVER_PATH
                        "' CUWRAP_HANDLE_REPORT='" +
                        (dir.path() / "report").string() + "'";
  if (trace) {
    command += " CUWRAP_TRACE_FILE='" + (dir.path() / "trace").string() + "'";
  }
  for (const auto& [name, value] : env) {
    command.append(" ").append(name).append("='").append(value).append("'");
  }
  command += " '" CUWRAP_CLIENT_PATH "' " + scenario + " >'" + (dir.path() / "out").string() +
             "' 2>'" + (dir.path() / "err").string() + "'";
  ClientRun run;
  run.status = std::system(command.c_str());
  run.out = read_file(dir.path() / "out");
  run.err = read_file(dir.path() / "err");
  run.report = read_file(dir.path() / "report");
  run.trace = trace ? read_file(dir.path() / "trace") : std::string();
  return run;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The number after `key ` on the report's line that starts with it.
long report_value(const std::string& report, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(report, m, std::regex("(^|\n)" + key + " ([0-9]+)"))) {
    return -1;
  }
  return std::stol(m[2]);
}

TEST(Interposer, CountsLiveHandlesAndReportsThemAtExit) {
  const ClientRun run = run_client("alloc");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "kept one\n");
  EXPECT_EQ(report_value(run.report, "total live"), 1) << run.report;
  EXPECT_TRUE(std::regex_search(run.report, std::regex("\nlive memory 0x[0-9a-f]+ cuMemAlloc #")))
      << run.report;
  EXPECT_FALSE(has(run.report, "\nfault ")) << run.report;
}

TEST(Interposer, FailsTheNthCallOfANamedFunction) {
  const ClientRun run =
      run_client("alloc", {{"CUWRAP_FAULT_FUNCTION", "cuMemAlloc"}, {"CUWRAP_FAULT_AT", "2"}});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "DriverError cuMemAlloc CUDA_ERROR_OUT_OF_MEMORY\n");
  EXPECT_TRUE(has(run.report, "\nfault 2 cuMemAlloc CUDA_ERROR_OUT_OF_MEMORY\n")) << run.report;
  // The client holds no RAII object: its first block is left alive by the exception.
  EXPECT_EQ(report_value(run.report, "total live"), 1) << run.report;
  EXPECT_EQ(report_value(run.report, "counted"), 2) << "the failed call is counted, none after it";
}

TEST(Interposer, TakesTheFaultStatusByNameOrNumber) {
  const ClientRun by_number = run_client("alloc", {{"CUWRAP_FAULT_FUNCTION", "cuMemAlloc"},
                                                   {"CUWRAP_FAULT_AT", "1"},
                                                   {"CUWRAP_FAULT_STATUS", "1"}});
  EXPECT_EQ(by_number.out, "DriverError cuMemAlloc CUDA_ERROR_INVALID_VALUE\n") << by_number.err;
  const ClientRun by_name =
      run_client("alloc", {{"CUWRAP_FAULT_FUNCTION", "cuMemFree"},
                           {"CUWRAP_FAULT_AT", "1"},
                           {"CUWRAP_FAULT_STATUS", "CUDA_ERROR_ILLEGAL_ADDRESS"}});
  EXPECT_EQ(by_name.out, "DriverError cuMemFree CUDA_ERROR_ILLEGAL_ADDRESS\n") << by_name.err;
}

TEST(Interposer, RejectsABadFaultStatusAndRunsUnharmed) {
  const ClientRun run =
      run_client("alloc", {{"CUWRAP_FAULT_AT", "1"}, {"CUWRAP_FAULT_STATUS", "CUDA_BOGUS"}});
  EXPECT_EQ(run.out, "kept one\n");
  EXPECT_TRUE(has(run.err, "CUWRAP_FAULT_STATUS=CUDA_BOGUS is not an error status")) << run.err;
}

// Every call of the scenario failed in turn (the fault sweep in miniature): each run
// ends with the exception naming the call that failed.
TEST(Interposer, EveryCallFailedInTurnNamesTheFailingCall) {
  const ClientRun baseline = run_client("alloc");
  const long calls = report_value(baseline.report, "counted");
  ASSERT_GE(calls, 5) << baseline.report;
  for (long n = 1; n <= calls; ++n) {
    const ClientRun run = run_client("alloc", {{"CUWRAP_FAULT_AT", std::to_string(n)}});
    ASSERT_EQ(run.status, 0) << "call " << n << ": " << run.err;
    std::smatch fault;
    ASSERT_TRUE(std::regex_search(run.report, fault, std::regex("\nfault [0-9]+ (\\w+) ")))
        << "call " << n << ": " << run.report;
    EXPECT_EQ(run.out, "DriverError " + fault[1].str() + " CUDA_ERROR_OUT_OF_MEMORY\n")
        << "call " << n;
  }
}

TEST(Interposer, ReleaseFailureGoesToTheHandlerAndNothingIsThrown) {
  const ClientRun run = run_client(
      "stream", {{"CUWRAP_FAULT_FUNCTION", "cuStreamDestroy"}, {"CUWRAP_FAULT_AT", "1"}});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "release-failure cuStreamDestroy Stream " +
                         std::to_string(static_cast<int>(CUDA_ERROR_OUT_OF_MEMORY)) +
                         "\nstream released\n")
      << run.err;
  EXPECT_TRUE(has(run.report, "\nabandoned stream 0x")) << run.report;
  EXPECT_FALSE(has(run.report, "\nlive stream ")) << run.report;
}

TEST(Interposer, ArchDetectionPassesDriverFailuresThrough) {
  // Only a missing driver or device means "ProgramOptions::arch is required"; a failure
  // while finding the current device is the DriverError of the call that failed.
  const ClientRun run =
      run_client("arch", {{"CUWRAP_FAULT_FUNCTION", "cuCtxGetCurrent"}, {"CUWRAP_FAULT_AT", "1"}});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "DriverError cuCtxGetCurrent CUDA_ERROR_OUT_OF_MEMORY\n") << run.err;
}

TEST(Interposer, ReleasesWithoutAFaultLeaveNoStream) {
  const ClientRun run = run_client("stream");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "stream released\n");
  EXPECT_FALSE(has(run.report, "\nlive stream ")) << run.report;
  EXPECT_TRUE(has(run.report, "\ntotal live 1 abandoned 0"))
      << "the primary context: " << run.report;
}

TEST(Interposer, TracesCallsWithArgumentsOutputsAndStatuses) {
  const ClientRun run =
      run_client("alloc", {{"CUWRAP_FAULT_FUNCTION", "cuMemFree"}, {"CUWRAP_FAULT_AT", "2"}}, true);
  EXPECT_TRUE(std::regex_search(
      run.trace,
      std::regex("cuwrap-trace: #[0-9]+ cuMemAlloc\\(dptr=0x[0-9a-f]+, bytesize=256\\) = "
                 "CUDA_SUCCESS -> dptr=0x[0-9a-f]+\n")))
      << run.trace;
  EXPECT_TRUE(std::regex_search(
      run.trace,
      std::regex("cuMemFree\\(dptr=0x10300\\) = CUDA_ERROR_OUT_OF_MEMORY \\(injected\\)\n")))
      << run.trace;
  EXPECT_TRUE(has(run.trace, "cuInit(Flags=0) = CUDA_SUCCESS\n")) << run.trace;
}

TEST(Interposer, AnswersAsTheRealDriverByDefault) {
  const ClientRun run = run_client("version");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, std::string("driver 13000\ncuStreamGetCtx 0 0x1111\n") +
                         (CUDA_VERSION >= 12080 ? "cuStreamGetDevice 0\n"
                                                : "cuStreamGetDevice not in these headers\n"));
}

TEST(Interposer, EmulatesAnOlderDriver) {
  const ClientRun run = run_client("version", {{"CUWRAP_EMULATE_DRIVER_VERSION", "12.4"}});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(has(run.out, "driver 12040\ncuStreamGetCtx 0 0x1111\n")) << run.out;
  EXPECT_FALSE(has(run.out, "cuStreamGetDevice 0\n"))
      << "cuStreamGetDevice is CUDA 12.8: " << run.out;
}

// In process: what cuGetProcAddress hands out, wrapped or not.
class InterposerInProcess : public ::testing::Test {
 protected:
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t,
                               CUdriverProcAddressQueryResult*);

  // Open the interposer with its environment; skipped where this process already has
  // it (its configuration is read once, at its first use).
  void open(const char* emulate) {
    if (::dlopen(CUWRAP_INTERPOSER_PATH, RTLD_NOW | RTLD_NOLOAD) != nullptr) {
      GTEST_SKIP() << "the interposer is already loaded in this process; run one test per process";
    }
    ::setenv("CUWRAP_INTERPOSER_LIBCUDA", CUWRAP_FAKE_DRIVER_PATH, 1);
    if (emulate != nullptr) {
      ::setenv("CUWRAP_EMULATE_DRIVER_VERSION", emulate, 1);
    }
    interposer = ::dlopen(CUWRAP_INTERPOSER_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(interposer, nullptr) << ::dlerror();
    get_proc = reinterpret_cast<GetProc>(::dlsym(interposer, "cuGetProcAddress_v2"));
    ASSERT_NE(get_proc, nullptr);
  }

  // The file of the library that holds `fn`.
  static std::string library_of(void* fn) {
    Dl_info info{};
    return ::dladdr(fn, &info) != 0 && info.dli_fname != nullptr ? info.dli_fname : "";
  }

  void* interposer = nullptr;
  GetProc get_proc = nullptr;
};

TEST_F(InterposerInProcess, WrapsOnlyRequestsAtTheGeneratedAbiVersion) {
  open(nullptr);
  if (IsSkipped()) {
    return;
  }
  void* wrapped = nullptr;
  CUdriverProcAddressQueryResult found{};
  ASSERT_EQ(get_proc("cuMemAlloc", &wrapped, 3020, CU_GET_PROC_ADDRESS_DEFAULT, &found),
            CUDA_SUCCESS);
  EXPECT_EQ(found, CU_GET_PROC_ADDRESS_SUCCESS);
  EXPECT_TRUE(has(library_of(wrapped), "cuwrap_interposer")) << library_of(wrapped);
  void* raw = nullptr;
  ASSERT_EQ(get_proc("cuMemAlloc", &raw, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found), CUDA_SUCCESS);
  EXPECT_TRUE(has(library_of(raw), "fake_driver")) << library_of(raw);
}

TEST_F(InterposerInProcess, CapsRequestsAtTheEmulatedVersion) {
  open("12040");
  if (IsSkipped()) {
    return;
  }
  void* fn = nullptr;
  CUdriverProcAddressQueryResult found{};
  EXPECT_NE(get_proc("cuStreamGetDevice", &fn, 12080, CU_GET_PROC_ADDRESS_DEFAULT, &found),
            CUDA_SUCCESS);
  EXPECT_EQ(found, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  // cuStreamGetCtx asked for in its 12.5 form comes back in its old (two-parameter) form.
  ASSERT_EQ(get_proc("cuStreamGetCtx", &fn, 12050, CU_GET_PROC_ADDRESS_DEFAULT, &found),
            CUDA_SUCCESS);
  CUcontext context = nullptr;
  ASSERT_EQ(reinterpret_cast<CUresult (*)(CUstream, CUcontext*)>(fn)(nullptr, &context),
            CUDA_SUCCESS);
  EXPECT_EQ(context, reinterpret_cast<CUcontext>(0x1111));
  using DriverGetVersion = CUresult (*)(int*);
  int version = 0;
  ASSERT_EQ(reinterpret_cast<DriverGetVersion>(::dlsym(interposer, "cuDriverGetVersion"))(&version),
            CUDA_SUCCESS);
  EXPECT_EQ(version, 12040);
}

}  // namespace
