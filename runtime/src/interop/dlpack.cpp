// DLPack export and import. See cuwrap/dlpack.hpp.
//
// Compiled wherever a dlpack.h is found; without CUWRAP_HAS_DLPACK (cuwrap configured
// without dlpack.h, or CUWRAP_WITH_DLPACK=OFF) the entry points refuse with
// UnsupportedError after releasing what they were handed.
#include <cuwrap/dlpack.hpp>

namespace cuwrap {

bool has_dlpack() noexcept {
#if defined(CUWRAP_HAS_DLPACK) && CUWRAP_HAS_DLPACK
  return true;
#else
  return false;
#endif
}

}  // namespace cuwrap

#if defined(CUWRAP_DLPACK_DECLARED)

#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/memory_resource.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cuwrap {
namespace {

std::string device_name(const DLDevice& device) {
  switch (device.device_type) {
    case kDLCPU:
      return "kDLCPU";
    case kDLCUDA:
      return "kDLCUDA:" + std::to_string(device.device_id);
    case kDLCUDAHost:
      return "kDLCUDAHost";
    case kDLCUDAManaged:
      return "kDLCUDAManaged";
    default:
      return "device type " + std::to_string(static_cast<int>(device.device_type));
  }
}

// Throw UnsupportedError naming dlpack.h where cuwrap was built without it.
void require_dlpack(const char* function) {
  if (!has_dlpack()) {
    throw UnsupportedError(
        function,
        "dlpack/dlpack.h at configure time; cuwrap was built without it (install "
        "libdlpack-dev or pass -DCUWRAP_DLPACK_INCLUDE_DIR=<dir holding "
        "dlpack/dlpack.h>, with CUWRAP_WITH_DLPACK on)");
  }
}

DataType data_type(const DLDataType& dtype) {
  return {static_cast<std::uint8_t>(dtype.code), dtype.bits, dtype.lanes};
}

// Bytes per element; throws for what a Buffer of bytes cannot describe.
std::size_t element_bytes(const char* where, const DLDataType& dtype) {
  return detail::data_type_bytes(where, data_type(dtype));
}

std::size_t extent_bytes(const char* where, std::span<const std::int64_t> shape,
                         std::span<const std::int64_t> strides, std::size_t element) {
  return detail::strided_extent_bytes(where, shape, strides, element);
}

std::vector<std::int64_t> compact_strides(std::span<const std::int64_t> shape) {
  return detail::compact_strides(shape);
}

// The handshake of a hand-over, when the caller named both streams.
void wait_for_producer(const detail::DLPackStreams& streams) {
  if (streams.producer != nullptr && streams.consumer != nullptr) {
    dlpack_stream_wait(*streams.producer, *streams.consumer);
  }
}

// What keeps an exported tensor's memory valid: a heap-held owner (a Buffer, or a
// copy of the caller's shared pointer) with the function that lets it go.
using BufferOwner = std::unique_ptr<void, void (*)(void*) noexcept>;

// What an exported tensor owns: the buffer's owner and the shape and strides it points to.
template <class Managed>
struct ExportContext {
  BufferOwner owner{nullptr, nullptr};
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
  Managed managed{};
};

// Check an export of `buffer`, then build the tensor; `take` returns the BufferOwner
// only once nothing can fail any more (a refused export leaves the buffer untouched).
template <class Managed, class Take>
Managed* export_tensor(const Buffer* buffer, DLDataType dtype, std::span<const std::int64_t> shape,
                       std::span<const std::int64_t> strides, detail::DLPackStreams streams,
                       Take&& take) {
  constexpr const char* kWhere = "to_dlpack";
  require_dlpack(kWhere);
  if (buffer == nullptr || !buffer->is_open()) {
    throw std::invalid_argument("to_dlpack: the buffer is null or closed");
  }
  if (!strides.empty() && strides.size() != shape.size()) {
    throw std::invalid_argument("to_dlpack: " + std::to_string(strides.size()) + " strides for " +
                                std::to_string(shape.size()) + " dimensions");
  }
  const std::size_t element = element_bytes(kWhere, dtype);
  auto context = std::make_unique<ExportContext<Managed>>();
  context->shape.assign(shape.begin(), shape.end());
  context->strides = strides.empty() ? compact_strides(shape)
                                     : std::vector<std::int64_t>(strides.begin(), strides.end());
  const std::size_t needed = extent_bytes(kWhere, context->shape, context->strides, element);
  if (needed > buffer->size()) {
    throw std::invalid_argument("to_dlpack: the tensor spans " + std::to_string(needed) +
                                " bytes but the buffer has " + std::to_string(buffer->size()));
  }
  DLTensor& t = context->managed.dl_tensor;
  t.data = reinterpret_cast<void*>(buffer->handle());
  t.device = dlpack_device(*buffer);
  t.ndim = static_cast<int>(shape.size());
  t.dtype = dtype;
  t.shape = context->shape.data();
  t.strides = context->strides.data();
  t.byte_offset = 0;
  wait_for_producer(streams);
  context->owner = take();
  context->managed.manager_ctx = context.get();
  context->managed.deleter = [](Managed* self) {
    delete static_cast<ExportContext<Managed>*>(
        self->manager_ctx);  // NOLINT(cppcoreguidelines-owning-memory)
  };
  return &context.release()->managed;
}

// The memory resource behind DLPackTensor::take_buffer(): one per imported tensor; its
// deallocate runs the tensor's deleter and then deletes the resource itself.
class DLPackOwner : public MemoryResource {
 public:
  DLPackOwner(void* managed, void (*deleter)(void*), DLDevice device)
      : managed_(managed), deleter_(deleter), device_(device) {}
  Buffer allocate(std::size_t /*size*/, StreamRef /*stream*/) override {
    throw std::logic_error("the memory resource of an imported DLPack tensor cannot allocate");
  }
  void deallocate(CUdeviceptr /*ptr*/, std::size_t /*size*/, StreamRef /*stream*/) override {
    deleter_(managed_);
    delete this;  // NOLINT(cppcoreguidelines-owning-memory): one resource per tensor
  }
  bool is_device_accessible() const override { return device_.device_type != kDLCPU; }
  bool is_host_accessible() const override { return device_.device_type != kDLCUDA; }
  int device_id() const override { return device_.device_type == kDLCUDA ? device_.device_id : -1; }
  DLDevice device() const { return device_; }

 private:
  void* managed_;
  void (*deleter_)(void*);
  DLDevice device_;
};

// Run the deleter of a DLManagedTensor[Versioned] given as void* (DLPackTensor's eraser).
template <class Managed>
void run_deleter(void* managed) {
  auto* tensor = static_cast<Managed*>(managed);
  if (tensor->deleter != nullptr) {
    tensor->deleter(tensor);
  }
}

void check_import_device(const DLDevice& device, int device_id) {
  const bool ok = (device.device_type == kDLCUDA && device.device_id == device_id) ||
                  device.device_type == kDLCUDAHost || device.device_type == kDLCUDAManaged ||
                  device.device_type == kDLCPU;
  if (!ok) {
    throw std::invalid_argument("DLPackTensor::from_dlpack: the tensor is on " +
                                device_name(device) + ", which device " +
                                std::to_string(device_id) +
                                " cannot use; cuwrap takes kDLCUDA memory of that device, "
                                "kDLCUDAHost, kDLCUDAManaged or kDLCPU");
  }
}

}  // namespace

DLDevice dlpack_device(const Buffer& buffer) {
  require_dlpack("dlpack_device");
  const MemoryResource* mr = buffer.memory_resource();
  if (const auto* owner = dynamic_cast<const DLPackOwner*>(mr)) {
    return owner->device();
  }
  if (dynamic_cast<const ManagedMemoryResource*>(mr) != nullptr) {
    return {kDLCUDAManaged, 0};
  }
  const bool device = buffer.is_device_accessible();
  const bool host = buffer.is_host_accessible();
  if (device && host) {
    if (mr == nullptr) {  // foreign memory: only the driver knows managed from pinned
      int managed = 0;
      detail::check(driver::raw::cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                                       buffer.handle()),
                    "cuPointerGetAttribute");
      if (managed != 0) {
        return {kDLCUDAManaged, 0};
      }
    }
    return {kDLCUDAHost, 0};
  }
  if (device) {
    return {kDLCUDA, buffer.device_id()};
  }
  if (!host) {
    // As cuda.core: memory that neither side can reach has no DLPack device.
    throw std::invalid_argument(
        "dlpack_device: the buffer is neither device- nor host-accessible (its memory "
        "resource says so); DLPack has no device for it");
  }
  return {kDLCPU, 0};
}

void dlpack_stream_wait(StreamRef producer, StreamRef consumer) {
  if (producer.handle() == consumer.handle()) {
    return;  // a stream is ordered after its own earlier work
  }
  consumer.wait(producer);
}

DLManagedTensor* to_dlpack(Buffer&& buffer, DLDataType dtype, std::span<const std::int64_t> shape,
                           std::span<const std::int64_t> strides) {
  return export_tensor<DLManagedTensor>(&buffer, dtype, shape, strides, {}, [&] {
    return BufferOwner(new Buffer(std::move(buffer)),
                       &detail::delete_owner<Buffer>);  // NOLINT(cppcoreguidelines-owning-memory)
  });
}

DLManagedTensor* to_dlpack(Buffer&& buffer, DLDataType dtype, std::span<const std::int64_t> shape,
                           std::span<const std::int64_t> strides, StreamRef producer,
                           StreamRef consumer) {
  return export_tensor<DLManagedTensor>(
      &buffer, dtype, shape, strides, {&producer, &consumer}, [&] {
        return BufferOwner(
            new Buffer(std::move(buffer)),
            &detail::delete_owner<Buffer>);  // NOLINT(cppcoreguidelines-owning-memory)
      });
}

namespace detail {

DLManagedTensor* to_dlpack_owned(const Buffer* buffer, void* owner,
                                 void (*release_owner)(void*) noexcept, DLDataType dtype,
                                 std::span<const std::int64_t> shape,
                                 std::span<const std::int64_t> strides, DLPackStreams streams) {
  BufferOwner held(owner, release_owner);  // released here if the export is refused
  return export_tensor<DLManagedTensor>(buffer, dtype, shape, strides, streams,
                                        [&] { return std::move(held); });
}

#if defined(DLPACK_MAJOR_VERSION)
DLManagedTensorVersioned* to_dlpack_versioned_owned(const Buffer* buffer, void* owner,
                                                    void (*release_owner)(void*) noexcept,
                                                    DLDataType dtype,
                                                    std::span<const std::int64_t> shape,
                                                    std::span<const std::int64_t> strides,
                                                    DLPackStreams streams) {
  BufferOwner held(owner, release_owner);
  DLManagedTensorVersioned* tensor = export_tensor<DLManagedTensorVersioned>(
      buffer, dtype, shape, strides, streams, [&] { return std::move(held); });
  tensor->version.major = DLPACK_MAJOR_VERSION;
  tensor->version.minor = DLPACK_MINOR_VERSION;
  tensor->flags = 0;
  return tensor;
}
#endif

}  // namespace detail

// ---- DLPackTensor ----

DLPackTensor DLPackTensor::from_dlpack(DLManagedTensor* tensor, int device_id) {
  if (tensor == nullptr) {
    throw std::invalid_argument("DLPackTensor::from_dlpack: the tensor is null");
  }
  DLPackTensor imported;
  imported.managed_ = tensor;
  imported.deleter_ = &run_deleter<DLManagedTensor>;
  imported.tensor_ = &tensor->dl_tensor;
  // From here on `imported` owns the tensor: an exception runs the deleter.
  imported.validate(device_id);
  return imported;
}

DLPackTensor DLPackTensor::from_dlpack(DLManagedTensor* tensor, int device_id, StreamRef producer,
                                       StreamRef consumer) {
  DLPackTensor imported = from_dlpack(tensor, device_id);
  dlpack_stream_wait(producer, consumer);  // on failure `imported` runs the deleter
  return imported;
}

#if defined(DLPACK_MAJOR_VERSION)
DLPackTensor DLPackTensor::from_dlpack(DLManagedTensorVersioned* tensor, int device_id) {
  if (tensor == nullptr) {
    throw std::invalid_argument("DLPackTensor::from_dlpack: the tensor is null");
  }
  DLPackTensor imported;
  imported.managed_ = tensor;
  imported.deleter_ = &run_deleter<DLManagedTensorVersioned>;
  if (tensor->version.major != DLPACK_MAJOR_VERSION) {
    throw std::invalid_argument("DLPackTensor::from_dlpack: DLPack major version " +
                                std::to_string(tensor->version.major) + " is not " +
                                std::to_string(DLPACK_MAJOR_VERSION));
  }
  imported.tensor_ = &tensor->dl_tensor;
  imported.read_only_ = (tensor->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  imported.validate(device_id);
  return imported;
}
#endif

DLPackTensor::DLPackTensor(DLPackTensor&& other) noexcept
    : managed_(std::exchange(other.managed_, nullptr)),
      deleter_(std::exchange(other.deleter_, nullptr)),
      tensor_(std::exchange(other.tensor_, nullptr)),
      compact_strides_(std::move(other.compact_strides_)),
      size_bytes_(std::exchange(other.size_bytes_, 0)),
      read_only_(std::exchange(other.read_only_, false)) {}

DLPackTensor& DLPackTensor::operator=(DLPackTensor&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

DLPackTensor::~DLPackTensor() { release(); }

void DLPackTensor::release() noexcept {
  if (managed_ != nullptr && deleter_ != nullptr) {
    deleter_(managed_);
  }
  managed_ = nullptr;
  deleter_ = nullptr;
  tensor_ = nullptr;
}

const DLTensor& DLPackTensor::tensor() const {
  if (tensor_ == nullptr) {
    throw std::logic_error("DLPackTensor: the tensor was handed on (take_buffer) or moved from");
  }
  return *tensor_;
}

void DLPackTensor::validate(int device_id) {
  require_dlpack("DLPackTensor::from_dlpack");
  const DLTensor& t = *tensor_;
  check_import_device(t.device, device_id);
  if (t.ndim < 0) {
    throw std::invalid_argument("DLPackTensor::from_dlpack: ndim " + std::to_string(t.ndim) +
                                " is negative");
  }
  const std::size_t element = element_bytes("DLPackTensor::from_dlpack", t.dtype);
  const std::span<const std::int64_t> shape(t.shape, static_cast<std::size_t>(t.ndim));
  if (t.strides == nullptr) {
    compact_strides_ = compact_strides(shape);
  }
  size_bytes_ = extent_bytes("DLPackTensor::from_dlpack", shape, strides(), element);
}

BufferRef DLPackTensor::buffer() const { return {data(), size_bytes_}; }

Buffer DLPackTensor::take_buffer() {
  const CUdeviceptr ptr = data();
  auto owner = std::make_unique<DLPackOwner>(managed_, deleter_, tensor_->device);
  Buffer buffer = Buffer::adopt(ptr, size_bytes_, owner.get());
  owner.release();  // NOLINT(bugprone-unused-return-value): the buffer's close() deletes it
  managed_ = nullptr;
  deleter_ = nullptr;
  tensor_ = nullptr;
  return buffer;
}

std::span<const std::int64_t> DLPackTensor::shape() const {
  const DLTensor& t = tensor();
  return {t.shape, static_cast<std::size_t>(t.ndim)};
}

std::span<const std::int64_t> DLPackTensor::strides() const {
  const DLTensor& t = tensor();
  if (t.strides == nullptr) {
    return compact_strides_;
  }
  return {t.strides, static_cast<std::size_t>(t.ndim)};
}

CUdeviceptr DLPackTensor::data() const {
  const DLTensor& t = tensor();
  return reinterpret_cast<CUdeviceptr>(t.data) + t.byte_offset;
}

std::size_t DLPackTensor::size_bytes() const {
  static_cast<void>(tensor());
  return size_bytes_;
}

DLDevice DLPackTensor::device() const { return tensor().device; }

bool DLPackTensor::is_host_accessible() const { return tensor().device.device_type != kDLCUDA; }

std::span<std::byte> DLPackTensor::host_bytes() const {
  if (!is_host_accessible()) {
    throw std::logic_error("DLPackTensor::host_bytes: the tensor is device memory (" +
                           device_name(tensor().device) + "); copy it to the host first");
  }
  return {reinterpret_cast<std::byte*>(data()), size_bytes_};
}

StridedMemoryView DLPackTensor::view() const {
  const DLTensor& t = tensor();
  const int device_id = t.device.device_type == kDLCUDA ? t.device.device_id : -1;
  return StridedMemoryView::from_pointer(data(), size_bytes_, device_id, data_type(t.dtype),
                                         shape(), strides(), read_only_);
}

bool DLPackTensor::is_contiguous() const {
  const std::span<const std::int64_t> dims = shape();
  const std::vector<std::int64_t> compact = compact_strides(dims);
  const std::span<const std::int64_t> actual = strides();
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] > 1 && actual[i] != compact[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace cuwrap

#endif  // CUWRAP_DLPACK_DECLARED
