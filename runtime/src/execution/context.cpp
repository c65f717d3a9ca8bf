// Green contexts: DeviceResources, SMResource, Context, and the Device members that make
// them. See cuwrap/green_context.hpp and cuwrap/context.hpp.
#include "base/context_registry.hpp"
#include "base/ref_counted.hpp"
#include "execution/green_contexts.hpp"

#include <cuwrap/context.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/loader.hpp>
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/green_context.hpp>
#include <cuwrap/version.hpp>

#include <algorithm>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace cuwrap {
namespace detail {
namespace {

// The CUcontexts of the green contexts cuwrap made that are alive (ContextRef::is_green).
struct LiveGreenContexts {
  std::mutex mutex;
  std::unordered_set<CUcontext> contexts;
};

LiveGreenContexts& live_green_contexts() {
  static auto* set = new LiveGreenContexts;  // never destroyed: contexts may outlive statics
  return *set;
}

void forget_green_context(CUcontext context) noexcept {
  LiveGreenContexts& live = live_green_contexts();
  const std::lock_guard<std::mutex> lock(live.mutex);
  live.contexts.erase(context);
}

}  // namespace

bool is_live_green_context(CUcontext context) noexcept {
  LiveGreenContexts& live = live_green_contexts();
  const std::lock_guard<std::mutex> lock(live.mutex);
  return live.contexts.count(context) != 0;
}

// One CUDA context made by Device::create_context, shared by its Context, its streams
// and (green) DeviceResources: a green context (`green` set), or a regular one
// (cuCtxCreate; `green` null).
struct GreenContextState : RefCounted {
  CUgreenCtx green = nullptr;
  CUcontext context = nullptr;        // cuCtxFromGreenCtx(green), or cuCtxCreate's
  unsigned long long context_id = 0;  // cuCtxGetId(context): the kernels' cache key
  int device_id = -1;

  GreenContextState() = default;
  GreenContextState(const GreenContextState&) = delete;
  GreenContextState& operator=(const GreenContextState&) = delete;
  ~GreenContextState() {
    if (green == nullptr && context == nullptr) {
      return;
    }
    if (green != nullptr) {
      forget_green_context(context);
    }
    if (context_recorded_destroyed(context_id)) {
      return;  // recorded destroyed already: nothing is left to release
    }
    // Its streams are gone (they kept this alive), but work they queued last, such as a
    // buffer's stream-ordered free, may still run: let it finish first.
    CUcontext previous = nullptr;
    if (context != nullptr) {
      CUresult status = driver::raw::cuCtxGetCurrent(&previous);
      report_release_failure(status, "cuCtxGetCurrent", "Context");
      if (status == CUDA_SUCCESS) {
        status = driver::raw::cuCtxSetCurrent(context);
        report_release_failure(status, "cuCtxSetCurrent", "Context");
      }
      if (status == CUDA_SUCCESS) {
        report_release_failure(driver::raw::cuCtxSynchronize(), "cuCtxSynchronize", "Context");
        report_release_failure(driver::raw::cuCtxSetCurrent(previous), "cuCtxSetCurrent",
                               "Context");
      }
    }
    // A context made later may get this one's address, never its ID: drop what the
    // kernels cached for this one.
    run_context_destroy_hook(context_id);
    const CUresult status = green != nullptr ? driver::raw::cuGreenCtxDestroy(green)
                                             : driver::raw::cuCtxDestroy(context);
    report_release_failure(status, green != nullptr ? "cuGreenCtxDestroy" : "cuCtxDestroy",
                           "Context");
    if (status == CUDA_SUCCESS) {
      note_context_destroyed(context_id);  // objects still bound to it throw from now on
    }
  }
};

void ref_acquire(const GreenContextState* state) noexcept { acquire_counted(state); }
void ref_release(const GreenContextState* state) noexcept { release_counted(state); }

}  // namespace detail

namespace {

constexpr int kGreenContextVersion = 12040;  // cuGreenCtxCreate, cuDevSmResourceSplitByCount
constexpr int kGreenStreamVersion = 12050;   // cuGreenCtxStreamCreate
constexpr int kIgnoreCoschedulingVersion =
    12060;                                      // CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING
constexpr int kStructuredSplitVersion = 13010;  // cuDevSmResourceSplit

// The split granularity the driver documents per architecture, for headers and drivers
// that do not report it in CUdevSmResource: {minimum group size, alignment}.
std::pair<unsigned, unsigned> documented_granularity(int device_id) {
  const int major = Device(device_id).compute_capability().major;
  if (major >= 9) {
    return {8, 8};
  }
  if (major == 8) {
    return {4, 2};
  }
  if (major == 7) {
    return {2, 2};
  }
  return {1, 1};
}

// {minimum group size, alignment} of `resource`, as reported by the driver where the
// headers and the driver have the fields (CUDA 13), else `fallback`.
std::pair<unsigned, unsigned> granularity_of(const CUdevResource& resource,
                                             std::pair<unsigned, unsigned> fallback) {
#if CUDA_VERSION >= 13000
  const unsigned min_size = resource.sm.minSmPartitionSize;
  const unsigned alignment = resource.sm.smCoscheduledAlignment;
  return {min_size != 0 ? min_size : fallback.first, alignment != 0 ? alignment : fallback.second};
#else
  static_cast<void>(resource);
  return fallback;
#endif
}

std::string join(const std::vector<unsigned>& values) {
  std::string text;
  for (const unsigned v : values) {
    text += (text.empty() ? "" : ", ") + std::to_string(v);
  }
  return "{" + text + "}";
}

[[noreturn]] void fail(const std::string& message) {
  throw std::invalid_argument("SMResource::split: " + message);
}

// The checks on SMResourceOptions made before the driver: the per-group fields have one
// entry per group, and no group asks for more SMs than `available`. Returns the number
// of groups.
std::size_t check_split_options(const SMResourceOptions& options, unsigned available) {
  const std::size_t groups = options.count.empty() ? 1 : options.count.size();
  for (const auto& [name, field] :
       {std::pair<const char*, const std::vector<unsigned>*>{"coscheduled_sm_count",
                                                             &options.coscheduled_sm_count},
        std::pair<const char*, const std::vector<unsigned>*>{
            "preferred_coscheduled_sm_count", &options.preferred_coscheduled_sm_count}}) {
    if (!field->empty() && field->size() != groups) {
      fail(std::string("SMResourceOptions::") + name + " has " + std::to_string(field->size()) +
           " entries but count asks for " + std::to_string(groups) +
           " group(s); give one entry per group or none");
    }
  }
  for (std::size_t i = 0; i < options.count.size(); ++i) {
    if (options.count[i] > available) {
      fail("SMResourceOptions::count[" + std::to_string(i) +
           "] = " + std::to_string(options.count[i]) + " exceeds the " + std::to_string(available) +
           " SMs of this resource");
    }
  }
  return groups;
}

bool uses_structured_fields(const SMResourceOptions& options) {
  return !options.coscheduled_sm_count.empty() || !options.preferred_coscheduled_sm_count.empty();
}

bool all_counts_equal(const std::vector<unsigned>& counts) {
  return std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<>()) == counts.end();
}

unsigned split_flags(const SMResourceOptions& options) {
  if (!options.backfill) {
    return 0;
  }
#if CUDA_VERSION >= 12060
  detail::require_driver(
      kIgnoreCoschedulingVersion,
      "SMResourceOptions::backfill (CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING)");
  return CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING;
#else
  detail::throw_toolkit_too_old(
      kIgnoreCoschedulingVersion,
      "SMResourceOptions::backfill (CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING)");
#endif
}

// A green context over `resources` of device `device_id` (its primary context must
// exist first, the driver's rule), owned by the returned state.
detail::Ref<detail::GreenContextState> make_green_context(int device_id, CUdevice device,
                                                          std::vector<CUdevResource>& resources) {
  const Device owner(device_id);
  const detail::ScopedContext scope(owner.context());
  const CUdevResourceDesc desc =
      driver::cuDevResourceGenerateDesc(resources.data(), static_cast<unsigned>(resources.size()));
  auto state = detail::make_ref<detail::GreenContextState>();
  state->device_id = device_id;
  state->green = driver::cuGreenCtxCreate(desc, device, CU_GREEN_CTX_DEFAULT_STREAM);
  state->context = driver::cuCtxFromGreenCtx(state->green);  // on failure, state destroys green
  state->context_id = detail::context_id(state->context);
  {
    detail::LiveGreenContexts& live = detail::live_green_contexts();
    const std::lock_guard<std::mutex> lock(live.mutex);
    live.contexts.insert(state->context);
  }
  return state;
}

#if CUDA_VERSION >= 13000
// cuCtxCreate_v4 (driver 12.5), what cuCtxCreate names from the 13.0 headers on (the
// 12.x headers map it to cuCtxCreate_v2).
constexpr int kContextCreateParamsVersion = 12050;
#endif

// A regular context of device `device_id` with CU_CTX_* `flags` (cuCtxCreate), owned by
// the returned state. cuCtxCreate pushes the new context; it is popped at once, so the
// caller's current context is what it was.
detail::Ref<detail::GreenContextState> make_regular_context(int device_id, CUdevice device,
                                                            unsigned flags) {
  auto state = detail::make_ref<detail::GreenContextState>();
  state->device_id = device_id;
#if CUDA_VERSION >= 13000
  detail::require_driver(kContextCreateParamsVersion, "Device::create_context (cuCtxCreate_v4)");
  state->context = driver::cuCtxCreate(nullptr, flags, device);
#else
  state->context = driver::cuCtxCreate(flags, device);
#endif
  // Popped before anything else can throw, so that no exit leaves it current.
  CUcontext popped = nullptr;
  detail::report_release_failure(driver::raw::cuCtxPopCurrent(&popped), "cuCtxPopCurrent",
                                 "Context");
  state->context_id = detail::context_id(state->context);
  return state;
}

// Return a Stream owning `handle`, a stream just made in `state`'s context; where that
// fails, destroy `handle` (a failure there goes to the release-failure handler) and rethrow.
Stream adopt_or_destroy(CUstream handle,
                        const detail::Ref<const detail::GreenContextState>& state) {
  try {
    return detail::adopt_stream(handle, state->context, state->device_id, state);
  } catch (...) {
    detail::report_release_failure(driver::raw::cuStreamDestroy(handle), "cuStreamDestroy",
                                   "Stream");
    throw;
  }
}

}  // namespace

// ---- SMResource --------------------------------------------------------------------

SMResource::SMResource(const CUdevResource& resource, int device_id, unsigned min_partition_size,
                       unsigned coscheduled_alignment, bool usable) noexcept
    : resource_(resource),
      device_id_(device_id),
      min_partition_size_(min_partition_size),
      coscheduled_alignment_(coscheduled_alignment),
      usable_(usable) {}

SMResourceSplit SMResource::split(const SMResourceOptions& options, bool dry_run) const {
  if (!usable_) {
    throw std::invalid_argument(
        "SMResource::split: this resource comes from a dry-run split and describes sizes "
        "only; split the resource it came from without dry_run");
  }
  check_split_options(options, sm_count());
  if (uses_structured_fields(options)) {
    return split_structured(options, dry_run);
  }
  const unsigned flags = split_flags(options);
  detail::require_driver(kGreenContextVersion, "green contexts (cuDevSmResourceSplitByCount)");
  if (all_counts_equal(options.count)) {
    return split_by_count(options.count.empty() ? 0U : options.count.front(),
                          options.count.empty() ? 1U : static_cast<unsigned>(options.count.size()),
                          flags, dry_run);
  }
  return split_in_steps(options.count, flags, dry_run);
}

SMResource SMResource::from_split(const CUdevResource& resource, bool usable,
                                  const detail::Ref<const detail::GreenContextState>& keep) const {
  const auto [min_size, alignment] =
      granularity_of(resource, {min_partition_size_, coscheduled_alignment_});
  SMResource made(resource, device_id_, min_size, alignment, usable);
  made.keep_ = keep;
  return made;
}

SMResourceSplit SMResource::split_by_count(unsigned count, unsigned wanted, unsigned flags,
                                           bool dry_run) const {
  std::vector<CUdevResource> result(wanted);
  CUdevResource remaining{};
  unsigned made = wanted;
  detail::check(driver::raw::cuDevSmResourceSplitByCount(result.data(), &made, &resource_,
                                                         &remaining, flags, count),
                "cuDevSmResourceSplitByCount");
  if (made == 0) {
    fail("the driver made no group of at least " + std::to_string(count) +
         " SMs from this "
         "resource's " +
         std::to_string(sm_count()) + " SMs");
  }
  SMResourceSplit split;
  split.groups.reserve(made);
  for (unsigned i = 0; i < made && i < wanted; ++i) {
    split.groups.push_back(from_split(result[i], !dry_run, keep_));
  }
  if (remaining.type == CU_DEV_RESOURCE_TYPE_SM && remaining.sm.smCount > 0) {
    split.remainder.push_back(from_split(remaining, !dry_run, keep_));
  }
  return split;
}

// Different counts per group with the CUDA 12.4 split, which makes equal groups only:
// one group per step, each split from what the step before left. The driver splits no
// split result again until a green context is made over it, so each step but the last
// makes a green context over the SMs left and splits that context's SMs; the groups
// keep those intermediate contexts alive.
SMResourceSplit SMResource::split_in_steps(const std::vector<unsigned>& counts, unsigned flags,
                                           bool dry_run) const {
  SMResourceSplit split;
  split.groups.reserve(counts.size());
  CUdevResource current = resource_;
  detail::Ref<const detail::GreenContextState> holder = keep_;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    CUdevResource group{};
    CUdevResource rest{};
    unsigned made = 1;
    detail::check(
        driver::raw::cuDevSmResourceSplitByCount(&group, &made, &current, &rest, flags, counts[i]),
        "cuDevSmResourceSplitByCount");
    if (made == 0) {
      fail("SMResourceOptions::count[" + std::to_string(i) + "] = " + std::to_string(counts[i]) +
           ": the driver made no group of that size from the " +
           std::to_string(current.sm.smCount) + " SMs left after groups 0.." + std::to_string(i) +
           " of " + join(counts) + " (this resource has " + std::to_string(sm_count()) + ")");
    }
    split.groups.push_back(from_split(group, !dry_run, holder));
    const bool last = i + 1 == counts.size();
    const bool has_rest = rest.type == CU_DEV_RESOURCE_TYPE_SM && rest.sm.smCount > 0;
    if (last) {
      if (has_rest) {
        split.remainder.push_back(from_split(rest, !dry_run, holder));
      }
      break;
    }
    const unsigned left = has_rest ? rest.sm.smCount : 0U;
    if (left == 0 || left < counts[i + 1]) {
      fail("SMResourceOptions::count " + join(counts) + ": " + std::to_string(left) +
           " SMs are left for group " + std::to_string(i + 1) + " (at least " +
           std::to_string(counts[i + 1]) + ") after group " + std::to_string(i) + " took " +
           std::to_string(group.sm.smCount) + " (this resource has " + std::to_string(sm_count()) +
           ")");
    }
    std::vector<CUdevResource> leftover{rest};
    Device owner(device_id_);
    auto state = make_green_context(device_id_, owner.handle(), leftover);
    current = driver::cuGreenCtxGetDevResource(state->green, CU_DEV_RESOURCE_TYPE_SM);
    holder = detail::Ref<const detail::GreenContextState>(std::move(state));
  }
  return split;
}

SMResourceSplit SMResource::split_structured(const SMResourceOptions& options, bool dry_run) const {
#if CUDA_VERSION >= 13010
  detail::require_driver(kStructuredSplitVersion,
                         "SMResourceOptions::coscheduled_sm_count and "
                         "preferred_coscheduled_sm_count (cuDevSmResourceSplit)");
  if (options.backfill) {
    fail(
        "SMResourceOptions::backfill cannot be combined with coscheduled_sm_count or "
        "preferred_coscheduled_sm_count (the structured split takes co-scheduling per group)");
  }
  const std::size_t groups = options.count.empty() ? 1 : options.count.size();
  std::vector<CU_DEV_SM_RESOURCE_GROUP_PARAMS> params(groups);
  for (std::size_t i = 0; i < groups; ++i) {
    params[i] = CU_DEV_SM_RESOURCE_GROUP_PARAMS{};
    params[i].smCount = options.count.empty() ? 0U : options.count[i];
    if (!options.coscheduled_sm_count.empty()) {
      params[i].coscheduledSmCount = options.coscheduled_sm_count[i];
    }
    if (!options.preferred_coscheduled_sm_count.empty()) {
      params[i].preferredCoscheduledSmCount = options.preferred_coscheduled_sm_count[i];
    }
  }
  using SplitFunction = decltype(&::cuDevSmResourceSplit);
  static const auto split_function = reinterpret_cast<SplitFunction>(
      detail::resolve_driver_proc("cuDevSmResourceSplit", kStructuredSplitVersion));
  std::vector<CUdevResource> result(groups);
  CUdevResource remaining{};
  detail::check(split_function(result.data(), static_cast<unsigned>(groups), &resource_, &remaining,
                               0, params.data()),
                "cuDevSmResourceSplit");
  SMResourceSplit split;
  split.groups.reserve(groups);
  for (const CUdevResource& group : result) {
    split.groups.push_back(from_split(group, !dry_run, keep_));
  }
  if (remaining.type == CU_DEV_RESOURCE_TYPE_SM && remaining.sm.smCount > 0) {
    split.remainder.push_back(from_split(remaining, !dry_run, keep_));
  }
  return split;
#else
  static_cast<void>(options);
  static_cast<void>(dry_run);
  detail::throw_toolkit_too_old(kStructuredSplitVersion,
                                "SMResourceOptions::coscheduled_sm_count and "
                                "preferred_coscheduled_sm_count (cuDevSmResourceSplit)");
#endif
}

// ---- DeviceResources ---------------------------------------------------------------

SMResource DeviceResources::sm() const {
  const detail::ContextUse use(green_ != nullptr ? green_->context : nullptr,
                               green_ != nullptr ? green_->context_id : 0, "Context",
                               green_ != nullptr ? green_->green : nullptr, "DeviceResources::sm");
  const CUdevResource resource =
      green_ != nullptr
          ? driver::cuGreenCtxGetDevResource(green_->green, CU_DEV_RESOURCE_TYPE_SM)
          : driver::cuDeviceGetDevResource(Device(device_id_).handle(), CU_DEV_RESOURCE_TYPE_SM);
  const auto [min_size, alignment] = granularity_of(resource, documented_granularity(device_id_));
  return SMResource(resource, device_id_, min_size, alignment, true);
}

DeviceResources Device::resources() const {
  detail::require_driver(kGreenContextVersion, "green contexts (device resources)");
  return DeviceResources(ordinal_, {});
}

// ---- Context -----------------------------------------------------------------------

Context Device::create_context() const { return create_context(ContextOptions{}); }

Context Device::create_context(const ContextOptions& options) const {
  if (options.resources.empty()) {
    constexpr unsigned kKnownFlags =
        CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX | CU_CTX_FLAGS_MASK;
    if ((options.flags & ~kKnownFlags) != 0) {
      throw std::invalid_argument("Device::create_context: ContextOptions::flags " +
                                  std::to_string(options.flags) +
                                  " has bits that are no CU_CTX_* flag");
    }
    return Context(make_regular_context(ordinal_, device_, options.flags));
  }
  detail::require_driver(kGreenContextVersion, "green contexts (cuGreenCtxCreate)");
  if (options.flags != 0) {
    throw std::invalid_argument("Device::create_context: ContextOptions::flags " +
                                std::to_string(options.flags) +
                                " must be 0 for a green context (with resources)");
  }
  std::vector<CUdevResource> resources;
  resources.reserve(options.resources.size());
  for (std::size_t i = 0; i < options.resources.size(); ++i) {
    const SMResource& r = options.resources[i];
    if (r.device_id() != ordinal_) {
      throw std::invalid_argument("Device::create_context: ContextOptions::resources[" +
                                  std::to_string(i) + "] belongs to device " +
                                  std::to_string(r.device_id()) + ", not to device " +
                                  std::to_string(ordinal_));
    }
    if (!r.is_usable()) {
      throw std::invalid_argument("Device::create_context: ContextOptions::resources[" +
                                  std::to_string(i) +
                                  "] comes from a dry-run split and cannot make a context");
    }
    resources.push_back(r.handle());
  }
  auto state = make_green_context(ordinal_, device_, resources);
  return Context(std::move(state));
}

Context::Context(detail::Ref<const detail::GreenContextState> state) noexcept
    : state_(std::move(state)) {
  handle_ = state_->context;
}

Context& Context::operator=(Context&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

Context::~Context() { close(); }

const detail::GreenContextState& Context::state(const char* operation) const {
  if (state_ == nullptr) {
    throw std::logic_error(std::string("Context::") + operation + " on a closed Context");
  }
  if (detail::context_recorded_destroyed(state_->context_id)) [[unlikely]] {
    detail::throw_context_destroyed("Context", state_->green, state_->context_id,
                                    (std::string("Context::") + operation).c_str());
  }
  return *state_;
}

Stream Context::create_stream(const StreamOptions& options) const {
  const detail::GreenContextState& s = state("create_stream");
  const detail::ContextUse use(s.context, s.context_id, "Context", s.green,
                               "Context::create_stream");
  if (s.green == nullptr) {
    const detail::ScopedContext scope(s.context);
    const auto [least, greatest] = driver::cuCtxGetStreamPriorityRange();
    // Clamped into the context's range, as the driver does.
    const int priority = std::clamp(options.priority, greatest, least);
    const CUstream handle = driver::cuStreamCreateWithPriority(
        options.nonblocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT, priority);
    return adopt_or_destroy(handle, state_);
  }
#if CUDA_VERSION >= 12050
  detail::require_driver(kGreenStreamVersion,
                         "streams in a green context (cuGreenCtxStreamCreate)");
  if (!options.nonblocking) {
    throw std::invalid_argument(
        "Context::create_stream: StreamOptions::nonblocking must be true: streams of a "
        "green context never synchronise with the legacy default stream");
  }
  const detail::ScopedContext scope(s.context);
  const auto [least, greatest] = driver::cuCtxGetStreamPriorityRange();
  if (options.priority < greatest || options.priority > least) {
    throw std::invalid_argument("StreamOptions::priority " + std::to_string(options.priority) +
                                " is outside the range [" + std::to_string(greatest) + ", " +
                                std::to_string(least) + "] (lower numbers are higher priority)");
  }
  const CUstream handle =
      driver::cuGreenCtxStreamCreate(s.green, CU_STREAM_NON_BLOCKING, options.priority);
  return adopt_or_destroy(handle, state_);
#else
  static_cast<void>(s);
  static_cast<void>(options);
  detail::throw_toolkit_too_old(kGreenStreamVersion,
                                "streams in a green context (cuGreenCtxStreamCreate)");
#endif
}

DeviceResources Context::resources() const {
  const detail::GreenContextState& s = state("resources");
  if (s.green == nullptr) {
    throw std::logic_error("Context::resources: a regular context has no green-context resources");
  }
  return DeviceResources(s.device_id, state_);
}

bool Context::is_green() const { return state("is_green").green != nullptr; }

Device Context::device() const { return Device(state("device").device_id); }

CUcontext Context::handle() const { return state("handle").context; }

CUgreenCtx Context::green_handle() const {
  const detail::GreenContextState& s = state("green_handle");
  if (s.green == nullptr) {
    throw std::logic_error("Context::green_handle: a regular context has no green handle");
  }
  return s.green;
}

void Context::close() noexcept {
  state_.reset();
  handle_ = nullptr;
}

}  // namespace cuwrap
