// et_plain_runner: the baseline of the runner benchmark (bench/op_runtime.py): a plain ExecuTorch
// program runner, built from the same SDK as libfatpte and using nothing of fatpte, the way an
// application that ships one .pte would: linked to ExecuTorch's runtime, CPU kernels and XNNPACK
// backend (their static initializers register them), the program mapped by ExecuTorch's own
// MmapDataLoader (without mlock, as fatpte maps its containers), planned buffers from MethodMeta,
// malloc-backed method and temp allocators.
//
//   et_plain_runner [--in-memory] PROGRAM.pte METHOD INPUT0.bin [INPUT1.bin ...]
//
// --in-memory: the program read into memory and served by a BufferDataLoader (kept for the whole
// run) instead of mapped. ExecuTorch 1.5.1's OpenvinoBackend frees the delegate's processed
// buffer after ov_core_import_model while the compiled model still reads it: with the mapped
// loader, the free unmaps it and the process crashes (SIGSEGV); the OpenVINO rows of the
// benchmark (bench/op_openvino.py) use this. fatpte never frees an entry's bytes while it is loaded.
//
// Each INPUTn.bin holds input n's elements as the method's input metadata describes them (dtype,
// static shape, row-major). Loads the program and the method, runs it once, and prints each
// output as `output N: V V ...` (floating outputs only: the benchmark's models return float32).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/extension/data_loader/mmap_data_loader.h>
#include <executorch/extension/memory_allocator/malloc_memory_allocator.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/runtime.h>

namespace R = executorch::runtime;

int main(int argc, char** argv) {
  const bool in_memory = argc > 1 && std::strcmp(argv[1], "--in-memory") == 0;
  if (in_memory) --argc, ++argv;
  if (argc < 3) {
    std::fprintf(stderr, "usage: et_plain_runner [--in-memory] PROGRAM.pte METHOD INPUT0.bin [INPUT1.bin ...]\n");
    return 2;
  }
  R::runtime_init();
  std::vector<char> bytes;
  std::optional<executorch::extension::MmapDataLoader> mapped;
  std::optional<executorch::extension::BufferDataLoader> buffer;
  if (in_memory) {
    std::ifstream file(argv[1], std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
    if (!file && !file.eof()) return std::fprintf(stderr, "cannot read %s\n", argv[1]), 1;
    buffer.emplace(bytes.data(), bytes.size());
  } else {
    auto loaded = executorch::extension::MmapDataLoader::from(
        argv[1], executorch::extension::MmapDataLoader::MlockConfig::NoMlock);
    if (!loaded.ok()) return std::fprintf(stderr, "cannot map %s\n", argv[1]), 1;
    mapped.emplace(std::move(loaded.get()));
  }
  R::DataLoader* loader = in_memory ? static_cast<R::DataLoader*>(&*buffer) : &*mapped;
  auto program = R::Program::load(loader);
  if (!program.ok()) return std::fprintf(stderr, "Program::load: 0x%x\n", static_cast<unsigned>(program.error())), 1;
  auto meta = program->method_meta(argv[2]);
  if (!meta.ok()) return std::fprintf(stderr, "no method %s\n", argv[2]), 1;
  std::vector<std::unique_ptr<uint8_t[]>> planned;
  std::vector<R::Span<uint8_t>> spans;
  for (size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) {
    const auto size = static_cast<size_t>(meta->memory_planned_buffer_size(i).get());
    planned.emplace_back(new uint8_t[size]);
    spans.emplace_back(planned.back().get(), size);
  }
  R::HierarchicalAllocator planned_memory({spans.data(), spans.size()});
  executorch::extension::MallocMemoryAllocator method_allocator, temp_allocator;
  R::MemoryManager memory(&method_allocator, &planned_memory, &temp_allocator);
  auto method = program->load_method(argv[2], &memory);
  if (!method.ok()) return std::fprintf(stderr, "load_method: 0x%x\n", static_cast<unsigned>(method.error())), 1;
  if (static_cast<size_t>(argc - 3) != method->inputs_size()) {
    return std::fprintf(stderr, "the method takes %zu inputs\n", method->inputs_size()), 2;
  }
  std::vector<std::vector<char>> data(method->inputs_size());
  std::vector<std::vector<R::etensor::TensorImpl::SizesType>> sizes(method->inputs_size());
  std::vector<std::vector<R::etensor::TensorImpl::DimOrderType>> orders(method->inputs_size());
  std::vector<std::unique_ptr<R::etensor::TensorImpl>> impls;
  for (size_t i = 0; i < method->inputs_size(); ++i) {
    auto info = meta->input_tensor_meta(i);
    if (!info.ok()) return std::fprintf(stderr, "input %zu is no tensor\n", i), 2;
    std::ifstream in(argv[3 + i], std::ios::binary);
    data[i].assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (data[i].size() != info->nbytes()) return std::fprintf(stderr, "input %zu: %zu bytes\n", i, info->nbytes()), 2;
    sizes[i].assign(info->sizes().begin(), info->sizes().end());
    orders[i].assign(info->dim_order().begin(), info->dim_order().end());
    impls.emplace_back(new R::etensor::TensorImpl(info->scalar_type(), static_cast<ssize_t>(sizes[i].size()),
                                                  sizes[i].data(), data[i].data(), orders[i].data()));
    if (method->set_input(R::EValue(executorch::aten::Tensor(impls.back().get())), i) != R::Error::Ok) {
      return std::fprintf(stderr, "set_input %zu failed\n", i), 1;
    }
  }
  if (method->execute() != R::Error::Ok) return std::fprintf(stderr, "execute failed\n"), 1;
  for (size_t o = 0; o < method->outputs_size(); ++o) {
    const auto& t = method->get_output(o).toTensor();
    std::printf("output %zu:", o);
    const float* f = t.const_data_ptr<float>();
    for (ssize_t k = 0; k < t.numel(); ++k) std::printf(" %.9g", static_cast<double>(f[k]));
    std::printf("\n");
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}
