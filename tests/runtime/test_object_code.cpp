// ObjectCode and Kernel: creation from memory and files, name expressions, lazy
// loading, kernel lookup, shared ownership, parameter layout, attributes.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "kernel_sources.hpp"
#include "toolkit_libraries.hpp"

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace {

using cuwrap::CodeType;
using cuwrap::Kernel;
using cuwrap::ObjectCode;
using cuwrap::Program;
using cuwrap::ProgramOptions;
using cuwrap::TargetType;
using cuwrap::testing::contains;

// cuda.core's saxpy and vector_add, and a kernel without parameters.
const std::string kObjectCodeKernels = std::string(cuwrap::testing::kSaxpySource) +
                                       "extern \"C\" __global__ void no_args() {}\n" +
                                       cuwrap::testing::kVectorAddSource;

const std::vector<std::string> kExpressions{"vector_add<float>"};

ObjectCode compile(TargetType target, std::optional<std::string> arch = "sm_90") {
  ProgramOptions options;
  options.arch = std::move(arch);
  Program program(kObjectCodeKernels, CodeType::Cxx, options);
  return program.compile(target, kExpressions);
}

// A scratch directory removed at the end of the test.
class TempDir {
 public:
  TempDir()
      : path_(std::filesystem::temp_directory_path() /
              ("cuwrap_object_code_" + std::to_string(std::random_device{}()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::filesystem::path write(const std::string& name, std::span<const char> bytes) const {
    std::filesystem::path file = path_ / name;
    std::ofstream(file, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return file;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

TEST(ObjectCode, FromMemoryKeepsTheBytes) {
  std::vector<char> bytes(257);
  std::mt19937 rng(7);
  for (char& b : bytes)
    b = static_cast<char>(rng());
  bytes[0] = 1;  // not empty, not NUL-led
  const ObjectCode cubin = ObjectCode::from_cubin(std::as_bytes(std::span(bytes)), "mine");
  EXPECT_EQ(cubin.code_type(), TargetType::Cubin);
  EXPECT_EQ(cubin.name(), "mine");
  ASSERT_EQ(cubin.code().size(), bytes.size());
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), cubin.code().begin()));
  EXPECT_EQ(ObjectCode::from_ltoir(std::as_bytes(std::span(bytes))).code_type(), TargetType::Ltoir);
  EXPECT_EQ(ObjectCode::from_fatbin(std::as_bytes(std::span(bytes))).code_type(),
            TargetType::Fatbin);
  const ObjectCode ptx = ObjectCode::from_ptx(".version 8.0");
  EXPECT_EQ(ptx.code_type(), TargetType::Ptx);
  EXPECT_EQ(std::string(ptx.code().begin(), ptx.code().end()), ".version 8.0");
  EXPECT_THROW(static_cast<void>(ObjectCode::from_cubin(std::span<const std::byte>{})),
               std::invalid_argument);
}

TEST(ObjectCode, CopiesShareTheCode) {
  CUWRAP_REQUIRE_NVRTC();
  const ObjectCode a = compile(TargetType::Ptx);
  const ObjectCode b = a;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(a.code().data(), b.code().data());
  EXPECT_EQ(b.lowered_name("vector_add<float>"), "_Z10vector_addIfEvPKT_S2_PS0_m");
}

TEST(ObjectCode, FromFileChoosesTheKindByExtension) {
  CUWRAP_REQUIRE_NVRTC();
  TempDir dir;
  const ObjectCode cubin = compile(TargetType::Cubin);
  const ObjectCode ptx = compile(TargetType::Ptx);
  const ObjectCode ltoir = compile(TargetType::Ltoir);
  struct Case {
    const char* file;
    const ObjectCode* source;
    TargetType type;
  };
  for (const Case& c :
       {Case{"k.cubin", &cubin, TargetType::Cubin}, Case{"k.ptx", &ptx, TargetType::Ptx},
        Case{"k.ltoir", &ltoir, TargetType::Ltoir}, Case{"k.fatbin", &cubin, TargetType::Fatbin}}) {
    const ObjectCode loaded = ObjectCode::from_file(dir.write(c.file, c.source->code()));
    EXPECT_EQ(loaded.code_type(), c.type) << c.file;
    EXPECT_EQ(loaded.name(), c.file);
    ASSERT_EQ(loaded.code().size(), c.source->code().size()) << c.file;
    EXPECT_TRUE(std::equal(loaded.code().begin(), loaded.code().end(), c.source->code().begin()))
        << c.file;
  }
}

TEST(ObjectCode, ObjectsAndLibrariesAreLinkInputsWithSymbolMapping) {
  TempDir dir;
  const std::vector<char> bytes{'\x7f', 'E', 'L', 'F', 1, 2, 3};
  const ObjectCode::SymbolMapping mapping{{"add<int>", "_Z3addIiEvPT_"}};
  const ObjectCode object = ObjectCode::from_file(dir.write("unit.o", bytes), mapping);
  const ObjectCode library = ObjectCode::from_file(dir.write("libunits.a", bytes));
  EXPECT_EQ(object.code_type(), TargetType::Object);
  EXPECT_EQ(library.code_type(), TargetType::Library);
  EXPECT_EQ(cuwrap::to_string(TargetType::Object), "object");
  EXPECT_EQ(cuwrap::to_string(TargetType::Library), "library");
  EXPECT_EQ(object.lowered_name("add<int>"), "_Z3addIiEvPT_");
  EXPECT_THROW(static_cast<void>(library.lowered_name("add<int>")), std::invalid_argument);
  for (const ObjectCode* code : {&object, &library}) {
    try {
      static_cast<void>(code->get_kernel("add<int>"));
      FAIL() << "expected std::logic_error";
    } catch (const std::logic_error& e) {
      EXPECT_TRUE(contains(e.what(), "link it with Linker first")) << e.what();
    }
  }
  const std::span<const std::byte> image = std::as_bytes(std::span(bytes));
  EXPECT_EQ(ObjectCode::from_object(image).code_type(), TargetType::Object);
  EXPECT_EQ(ObjectCode::from_library(image, "lib").name(), "lib");
  const ObjectCode fat = ObjectCode::from_fatbin(image, "fat", mapping);
  EXPECT_EQ(fat.lowered_name("add<int>"), "_Z3addIiEvPT_");
  const ObjectCode cubin = ObjectCode::from_cubin(image, "c", mapping);
  EXPECT_EQ(cubin.name_expressions(), mapping);
}

TEST(ObjectCode, FromFileRejectsUnknownExtensionsAndMissingFiles) {
  TempDir dir;
  const std::vector<char> bytes{'a', 'b', 'c'};
  try {
    static_cast<void>(ObjectCode::from_file(dir.write("kernels.bin", bytes)));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "'.bin'")) << e.what();
  }
  const std::filesystem::path missing = dir.path() / "missing.cubin";
  try {
    static_cast<void>(ObjectCode::from_file(missing));
    FAIL() << "expected an error for a missing file";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory) << e.what();
    EXPECT_TRUE(contains(e.what(), missing.string())) << e.what();
  }
}

// Every file error is a std::system_error with the errno and the path: a directory
// named like code, and a file this process may not read.
TEST(ObjectCode, FromFileReportsTheErrnoAndThePath) {
  TempDir dir;
  const std::filesystem::path folder = dir.path() / "folder.cubin";
  std::filesystem::create_directory(folder);
  try {
    static_cast<void>(ObjectCode::from_file(folder));
    FAIL() << "expected an error for a directory";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::is_a_directory) << e.what();
    EXPECT_TRUE(contains(e.what(), folder.string())) << e.what();
  }
  if (::geteuid() == 0) {
    GTEST_SKIP() << "root reads a file without read permission";
  }
  const std::filesystem::path locked = dir.write("locked.ptx", std::vector<char>{'x'});
  std::filesystem::permissions(locked, std::filesystem::perms::none);
  try {
    static_cast<void>(ObjectCode::from_file(locked));
    FAIL() << "expected an error for an unreadable file";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::permission_denied) << e.what();
    EXPECT_TRUE(contains(e.what(), locked.string())) << e.what();
  }
}

TEST(ObjectCode, LtoirCannotBeLoaded) {
  CUWRAP_REQUIRE_NVRTC();
  const ObjectCode ltoir = compile(TargetType::Ltoir);
  try {
    static_cast<void>(ltoir.get_kernel("saxpy"));
    FAIL() << "expected std::logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_TRUE(contains(e.what(), "Linker")) << e.what();
  }
}

TEST(ObjectCode, TargetTypeNames) {
  EXPECT_EQ(cuwrap::to_string(TargetType::Ptx), "ptx");
  EXPECT_EQ(cuwrap::to_string(TargetType::Cubin), "cubin");
  EXPECT_EQ(cuwrap::to_string(TargetType::Ltoir), "ltoir");
  EXPECT_EQ(cuwrap::to_string(TargetType::Fatbin), "fatbin");
}

// ---- with a GPU ------------------------------------------------------------------

class ObjectCodeGpu : public cuwrap::testing::DeviceTest {};

TEST_F(ObjectCodeGpu, GetKernelByNameAndByNameExpression) {
  CUWRAP_REQUIRE_NVRTC();
  for (TargetType target : {TargetType::Cubin, TargetType::Ptx}) {
    const ObjectCode obj = compile(target, std::nullopt);
    EXPECT_NE(obj.handle(), nullptr);
    const Kernel saxpy = obj.get_kernel("saxpy");
    EXPECT_EQ(saxpy.name(), "saxpy");
    EXPECT_NE(saxpy.handle(), nullptr);
    const Kernel add = obj.get_kernel("vector_add<float>");
    EXPECT_EQ(add.symbol(), "_Z10vector_addIfEvPKT_S2_PS0_m");
    EXPECT_EQ(obj.get_kernel("_Z10vector_addIfEvPKT_S2_PS0_m").symbol(), add.symbol());
  }
}

TEST_F(ObjectCodeGpu, UnknownKernelListsTheKernelsThatExist) {
  CUWRAP_REQUIRE_NVRTC();
  const ObjectCode obj = compile(TargetType::Cubin, std::nullopt);
  try {
    static_cast<void>(obj.get_kernel("saxpi"));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_TRUE(contains(message, "'saxpi'")) << message;
    EXPECT_TRUE(contains(message, "saxpy")) << message;
    EXPECT_TRUE(contains(message, "no_args")) << message;
    EXPECT_TRUE(contains(message, "_Z10vector_addIfEvPKT_S2_PS0_m")) << message;
  }
}

TEST_F(ObjectCodeGpu, ArgumentsInfoIsTheParameterLayout) {
  CUWRAP_REQUIRE_NVRTC();
  const ObjectCode obj = compile(TargetType::Cubin, std::nullopt);
  const Kernel saxpy = obj.get_kernel("saxpy");
  ASSERT_EQ(saxpy.num_arguments(), 5u);
  const std::size_t offsets[] = {0, 8, 16, 24, 32};
  const std::size_t sizes[] = {4, 8, 8, 8, 8};
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(saxpy.arguments_info()[i].offset, offsets[i]) << i;
    EXPECT_EQ(saxpy.arguments_info()[i].size, sizes[i]) << i;
  }
  EXPECT_EQ(obj.get_kernel("no_args").num_arguments(), 0u);
}

TEST_F(ObjectCodeGpu, KernelKeepsTheLibraryAliveAndCopiesShareIt) {
  CUWRAP_REQUIRE_NVRTC();
  std::optional<Kernel> kernel;
  {
    const ObjectCode obj = compile(TargetType::Cubin, std::nullopt);
    kernel = obj.get_kernel("no_args");
  }
  const Kernel copy = *kernel;  // NOLINT(performance-unnecessary-copy-initialization)
  kernel.reset();
  cuwrap::Stream stream = cuwrap::Device(0).create_stream();
  cuwrap::launch(stream, {.grid = 1, .block = 32}, copy);
  stream.sync();
  EXPECT_EQ(copy.attributes().max_threads_per_block(), 1024);
}

TEST_F(ObjectCodeGpu, KernelAttributesAgreeWithTheDriver) {
  CUWRAP_REQUIRE_NVRTC();
  const ObjectCode obj = compile(TargetType::Cubin, std::nullopt);
  const Kernel kernel = obj.get_kernel("vector_add<float>");
  const CUfunction function = cuwrap::driver::cuKernelGetFunction(kernel.handle());
  const cuwrap::KernelAttributes attributes = kernel.attributes();
  const cuwrap::Device device(0);
  for (int a = 0; a < CU_FUNC_ATTRIBUTE_MAX; ++a) {
    const auto attribute = static_cast<CUfunction_attribute>(a);
    const int expected = cuwrap::driver::cuFuncGetAttribute(attribute, function);
    EXPECT_EQ(attributes.get(attribute), expected) << cuwrap::to_string(attribute);
    EXPECT_EQ(attributes.get(attribute, device), expected) << cuwrap::to_string(attribute);
  }
  EXPECT_EQ(attributes.num_regs(),
            cuwrap::driver::cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS, function));
  EXPECT_EQ(attributes.max_threads_per_block(device),
            cuwrap::driver::cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function));
  EXPECT_EQ(attributes.shared_size_bytes(), 0);
  EXPECT_EQ(attributes.binary_version(),
            device.compute_capability().major * 10 + device.compute_capability().minor);
}

// A CUBIN written to a file and loaded back with from_file runs: saxpy from the loaded
// image computes 2 * i + 1000 for every element (exact in float, so no fused
// multiply-add rounding can make the comparison flaky).
TEST_F(ObjectCodeGpu, FromFileCubinRuns) {
  CUWRAP_REQUIRE_NVRTC();
  TempDir dir;
  const ObjectCode built = compile(TargetType::Cubin, std::nullopt);
  const ObjectCode loaded = ObjectCode::from_file(dir.write("kernels.cubin", built.code()));
  ASSERT_EQ(loaded.code_type(), TargetType::Cubin);
  const Kernel saxpy = loaded.get_kernel("saxpy");
  constexpr std::size_t kN = 1000;
  std::vector<float> x(kN);
  const std::vector<float> y(kN, 1000.0f);
  for (std::size_t i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(i);
  }
  const cuwrap::Stream stream = device().create_stream();
  cuwrap::Buffer dx = device().allocate(kN * sizeof(float), stream);
  cuwrap::Buffer dy = device().allocate(kN * sizeof(float), stream);
  cuwrap::Buffer out = device().allocate(kN * sizeof(float), stream);
  dx.copy_from(x, stream);
  dy.copy_from(y, stream);
  out.fill(std::uint8_t{0xAB}, stream);  // a stale value is not 2 * i + 1000
  cuwrap::launch(stream, {.grid = (kN + 127) / 128, .block = 128}, saxpy, 2.0f, dx, dy, out, kN);
  std::vector<float> result(kN);
  out.copy_to(result, stream);
  stream.sync();
  for (std::size_t i = 0; i < kN; ++i) {
    ASSERT_EQ(result[i], 2.0f * static_cast<float>(i) + 1000.0f) << i;
  }
}

TEST_F(ObjectCodeGpu, KernelFromHandleIsNonOwning) {
  CUWRAP_REQUIRE_NVRTC();
  const ObjectCode obj = compile(TargetType::Cubin, std::nullopt);
  const Kernel owned = obj.get_kernel("saxpy");
  const Kernel wrapped = Kernel::from_handle(owned.handle());
  EXPECT_EQ(wrapped.handle(), owned.handle());
  EXPECT_EQ(wrapped.name(), "saxpy");
  EXPECT_EQ(wrapped.num_arguments(), 5u);
}

}  // namespace
