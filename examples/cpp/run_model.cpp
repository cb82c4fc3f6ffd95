// run_model MODEL.nfat [--inputs CALLS.json] [--withhold BACKEND_ID]...: the ExecuTorch Module API
// on the entry of a fat container chosen for this device. The one line that differs from a plain
// ExecuTorch app is where the Module comes from.
//
// The inputs are the calls of a calls.json, the document `fatpte-run --inputs` reads (read by
// libfatpte's own reader, fatpte::calls_from_file): every call runs in order on the one Module, so
// a stateful program (a KV cache) sees its state carried from call to call. Without --inputs, one
// call is made up from the method's own MethodMeta: each input's shape and dtype, values 0, 1, ...
// 6, 0, ... Every output of every call is printed as one JSON tensor (the form calls.json uses):
//   call 0 output 0: {"dtype": "float32", "shape": [1, 3], "values": [...]}
// Every failure is printed with its reason; exit status 2 for usage, 3 when no entry loads, 1 when
// a call fails.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <executorch/extension/tensor/tensor.h>
#include <fatpte/module.hpp>
#include <fatpte/tensor.hpp>

namespace {

using executorch::runtime::EValue;

// Element i of `t` set to `v`, converted to its dtype.
void put(fatpte::Tensor& t, std::size_t i, double v) {
  using fatpte::DType;
  auto store = [&](auto x) { std::memcpy(t.data.data() + i * sizeof x, &x, sizeof x); };
  switch (t.dtype) {
    case DType::kFloat32: store(static_cast<float>(v)); break;
    case DType::kFloat64: store(v); break;
    case DType::kFloat16: store(fatpte::float_to_half(static_cast<float>(v))); break;
    case DType::kBFloat16: store(fatpte::float_to_bfloat16(static_cast<float>(v))); break;
    case DType::kBool: store(static_cast<std::uint8_t>(static_cast<int>(v) % 2)); break;
    case DType::kUInt8: store(static_cast<std::uint8_t>(v)); break;
    case DType::kInt8: store(static_cast<std::int8_t>(v)); break;
    case DType::kInt16: store(static_cast<std::int16_t>(v)); break;
    case DType::kUInt16: store(static_cast<std::uint16_t>(v)); break;
    case DType::kInt32: store(static_cast<std::int32_t>(v)); break;
    case DType::kUInt32: store(static_cast<std::uint32_t>(v)); break;
    case DType::kInt64: store(static_cast<std::int64_t>(v)); break;
    case DType::kUInt64: store(static_cast<std::uint64_t>(v)); break;
  }
}

// One call made up from the method's MethodMeta; false (the reason printed) when an input is not
// a tensor of a dtype fatpte knows.
bool made_up_call(executorch::extension::Module& module, std::vector<fatpte::Call>& calls) {
  const auto meta = module.method_meta("forward");
  if (!meta.ok()) {
    std::fprintf(stderr, "run_model: no method_meta for forward: %s\n", executorch::runtime::to_string(meta.error()));
    return false;
  }
  fatpte::Call call;
  for (std::size_t i = 0; i < meta->num_inputs(); ++i) {
    const auto info = meta->input_tensor_meta(i);
    const int code = info.ok() ? static_cast<int>(info->scalar_type()) : -1;
    if (!info.ok() || !fatpte::is_dtype(code)) {
      std::fprintf(stderr, "run_model: input %zu of forward is not a tensor of a known dtype; give --inputs\n", i);
      return false;
    }
    fatpte::Tensor t;
    t.dtype = static_cast<fatpte::DType>(code);
    t.shape.assign(info->sizes().begin(), info->sizes().end());
    t.data.resize(t.numel() * fatpte::element_size(t.dtype));
    for (std::size_t k = 0; k < t.numel(); ++k) put(t, k, static_cast<double>(k % 7));
    call.inputs.push_back(std::move(t));
  }
  calls.push_back(std::move(call));
  return true;
}

// An EValue refers to its tensor without owning it: the TensorPtr is kept for the call.
executorch::extension::TensorPtr to_tensor(const fatpte::Tensor& t) {
  std::vector<executorch::aten::SizesType> sizes(t.shape.begin(), t.shape.end());
  return executorch::extension::make_tensor_ptr(std::move(sizes), t.data,
                                                static_cast<executorch::aten::ScalarType>(t.dtype));
}

// An output as calls.json writes a tensor; a non-tensor output is said to be one.
std::string output_text(const EValue& value) {
  if (!value.isTensor()) return "(not a tensor: tag " + std::to_string(static_cast<int>(value.tag)) + ")";
  const executorch::aten::Tensor out = value.toTensor();
  fatpte::Tensor t;
  const int code = static_cast<int>(out.scalar_type());
  if (!fatpte::is_dtype(code)) return "(a tensor of ScalarType " + std::to_string(code) + ")";
  t.dtype = static_cast<fatpte::DType>(code);
  t.shape.assign(out.sizes().begin(), out.sizes().end());
  const auto* bytes = static_cast<const std::uint8_t*>(out.const_data_ptr());
  t.data.assign(bytes, bytes + out.nbytes());
  return fatpte::tensor_json(t);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: run_model MODEL.nfat [--inputs CALLS.json] [--withhold BACKEND_ID]...\n");
    return 2;
  }
  fatpte::ModuleOptions options;  // this machine, the install's backends, fallback to the next entry
  std::string inputs;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--withhold" && i + 1 < argc) {
      options.load.libraries[argv[++i]] = "";  // as if this backend's library were not installed
    } else if (arg == "--inputs" && i + 1 < argc) {
      inputs = argv[++i];
    } else {
      std::fprintf(stderr, "run_model: unknown argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  // A plain ExecuTorch app: executorch::extension::Module module(argv[1]);
  auto loaded = fatpte::load_module(argv[1], options);
  if (!loaded.ok()) {
    std::fprintf(stderr, "run_model: %s\n", loaded.error().describe().c_str());
    return 3;
  }
  std::printf("entry %s\n", loaded.value()->entry().name.c_str());
  std::unique_ptr<executorch::extension::Module> module = std::move(loaded).value();

  std::vector<fatpte::Call> calls;
  if (!inputs.empty()) {
    auto read = fatpte::calls_from_file(inputs);
    if (!read.ok()) {
      std::fprintf(stderr, "run_model: %s\n", read.error().describe().c_str());
      return 2;
    }
    calls = std::move(read).value();
  } else if (!made_up_call(*module, calls)) {
    return 1;
  }
  for (std::size_t c = 0; c < calls.size(); ++c) {
    std::vector<executorch::extension::TensorPtr> tensors;
    std::vector<EValue> values;
    for (const fatpte::Tensor& t : calls[c].inputs) {
      tensors.push_back(to_tensor(t));
      values.emplace_back(*tensors.back());
    }
    const auto outputs = module->forward(values);
    if (!outputs.ok()) {
      std::fprintf(stderr, "run_model: call %zu: forward failed: %s (ExecuTorch error 0x%x)\n", c,
                   executorch::runtime::to_string(outputs.error()), static_cast<unsigned>(outputs.error()));
      return 1;
    }
    for (std::size_t o = 0; o < outputs->size(); ++o) {
      std::printf("call %zu output %zu: %s\n", c, o, output_text((*outputs)[o]).c_str());
    }
  }
  return 0;
}
