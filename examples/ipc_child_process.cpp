// Sharing GPU buffers with a child process: the parent allocates two buffers from a
// memory pool that can be exported (ipc_enabled), starts this program again as its
// child with IPCChildProcess, and sends the pool handle and both buffers' descriptors
// as one IPCSharedBuffers message. The child opens its channel (IPCChannel::from_parent),
// imports the buffers, reads the input and writes twice each value into the output;
// the parent checks the output and the child's exit status.
//
// Linux only (pools export POSIX file descriptors). Needs a GPU whose pools export
// them; without one it says so and exits 0.
#include <cuwrap/cuwrap.hpp>

#include "support.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string_view>
#include <vector>

namespace {

constexpr std::size_t kCount = 1 << 16;

// The child: import the parent's two buffers, output[i] = 2 * input[i].
int child() {
  cuwrap::IPCChannel channel = cuwrap::IPCChannel::from_parent();
  cuwrap::Device device(0);
  device.set_current();
  cuwrap::Stream stream = device.create_stream();
  cuwrap::IPCSharedBuffers shared = channel.receive_shared_buffers();
  cuwrap::DeviceMemoryResource pool =
      cuwrap::DeviceMemoryResource::from_allocation_handle(device, std::move(shared.pool));
  cuwrap::Buffer input = cuwrap::Buffer::from_ipc_descriptor(pool, shared.buffers.at(0), stream);
  cuwrap::Buffer output = cuwrap::Buffer::from_ipc_descriptor(pool, shared.buffers.at(1), stream);

  std::vector<std::uint32_t> values(input.size() / sizeof(std::uint32_t));
  input.copy_to(values, stream);
  stream.sync();
  for (std::uint32_t& v : values) {
    v *= 2;
  }
  output.copy_from(values, stream);
  stream.sync();
  channel.send_value('W');                           // written
  static_cast<void>(channel.receive_value<char>());  // the parent has read it
  input.close(stream);                               // an importer frees before the exporter
  output.close(stream);
  stream.sync();
  return 0;
}

int parent() {
  cuwrap::Device device(0);
  device.set_current();
  if ((device.attribute(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES) &
       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
    std::cout << "cuwrap example skipped: ipc_child_process needs memory pools that export "
                 "POSIX file descriptors\n";
    return 0;
  }
  cuwrap::Stream stream = device.create_stream();
  cuwrap::DeviceMemoryResource pool(device,
                                    cuwrap::DeviceMemoryResourceOptions{.ipc_enabled = true});
  cuwrap::Buffer input = pool.allocate(kCount * sizeof(std::uint32_t), stream);
  cuwrap::Buffer output = pool.allocate(kCount * sizeof(std::uint32_t), stream);
  std::vector<std::uint32_t> values(kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    values[i] = static_cast<std::uint32_t>(i * 7 + 1);
  }
  input.copy_from(values, stream);
  stream.sync();

  // The child is this program again; it finds its end of the channel by itself.
  cuwrap::IPCChildProcess worker(std::filesystem::read_symlink("/proc/self/exe"), {"--child"});
  worker.channel().send(cuwrap::IPCSharedBuffers{
      pool.get_allocation_handle(), {input.get_ipc_descriptor(), output.get_ipc_descriptor()}});
  if (worker.channel().receive_value<char>() != 'W') {
    std::cerr << "ipc_child_process: FAILED: unexpected message from the child\n";
    return 1;
  }
  std::vector<std::uint32_t> doubled(kCount);
  output.copy_to(doubled, stream);
  stream.sync();
  worker.channel().send_value('X');
  const int status = worker.wait();

  std::size_t wrong = 0;
  for (std::size_t i = 0; i < kCount; ++i) {
    if (doubled[i] != 2 * values[i]) {
      ++wrong;
    }
  }
  if (status != 0) {
    std::cerr << "ipc_child_process: FAILED: the child exited with status " << status << '\n';
    return 1;
  }
  input.close(stream);
  output.close(stream);
  stream.sync();
  return example::verdict("ipc_child_process", kCount, wrong);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--child") {
    return example::run("ipc_child_process (child)", child);
  }
  return example::run_on_gpu("ipc_child_process", parent);
}
