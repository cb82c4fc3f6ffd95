// et_module_runner: a plain ExecuTorch application, built from the same SDK as libfatpte and using
// nothing of fatpte: ExecuTorch's Module API runs a .pte, and backend and kernel libraries are
// loaded at run time the way an application loads any backend library (dlopen; their static
// initializers register them). It runs fat-delegate programs in the tests and the benchmark: the
// fat delegate is just one more backend library here (libexecutorch_backend_fatpte.so).
//
//   et_module_runner [--lib LIB.so]... [--register ID]... [--option ID:KEY=VALUE]...
//                    [--method NAME] [--repeat N] PROGRAM.pte [CALL]...
//
// --lib        dlopen(LIB, RTLD_NOW | RTLD_GLOBAL) before the program is loaded (in order)
// --register   call fatpte_register_fat_backend(ID) of a loaded library: the fat delegate's
//              documented registration call, for fat programs written with another id
// --option     a load-time backend option (a runtime spec) for backend ID, a string value
// CALL         one call: its inputs as raw files, comma-separated (IN0.bin,IN1.bin), each holding
//              the input's elements as the method's input metadata describes them
//
// Prints `call N output K: DTYPE [SHAPE] V V ...` per output of each call (float32, float64,
// int32, int64 and bool outputs), and exits 1 with ExecuTorch's error when loading or a call fails.
#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <executorch/extension/module/module.h>
#include <executorch/runtime/backend/backend_options_map.h>
#include <executorch/runtime/backend/options.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/platform/runtime.h>

namespace R = executorch::runtime;
using executorch::extension::Module;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: et_module_runner [--lib LIB.so]... [--register ID]... [--option ID:KEY=VALUE]... "
               "[--method NAME] PROGRAM.pte [IN0.bin,IN1.bin]...\n");
  return 2;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

void print_tensor(const executorch::aten::Tensor& t) {
  const auto type = t.scalar_type();
  const char* name = type == executorch::aten::ScalarType::Float    ? "float32"
                     : type == executorch::aten::ScalarType::Double ? "float64"
                     : type == executorch::aten::ScalarType::Long   ? "int64"
                     : type == executorch::aten::ScalarType::Int    ? "int32"
                     : type == executorch::aten::ScalarType::Bool   ? "bool"
                                                                    : nullptr;
  if (name == nullptr) {
    std::printf(" ScalarType %d", static_cast<int>(type));
    return;
  }
  std::printf(" %s [", name);
  for (std::size_t d = 0; d < t.sizes().size(); ++d) std::printf(d ? ", %d" : "%d", static_cast<int>(t.sizes()[d]));
  std::printf("]");
  for (ssize_t k = 0; k < t.numel(); ++k) {
    switch (type) {
      case executorch::aten::ScalarType::Float: std::printf(" %.9g", static_cast<double>(t.const_data_ptr<float>()[k])); break;
      case executorch::aten::ScalarType::Double: std::printf(" %.17g", t.const_data_ptr<double>()[k]); break;
      case executorch::aten::ScalarType::Long: std::printf(" %lld", static_cast<long long>(t.const_data_ptr<int64_t>()[k])); break;
      case executorch::aten::ScalarType::Int: std::printf(" %d", t.const_data_ptr<int32_t>()[k]); break;
      default: std::printf(" %d", t.const_data_ptr<bool>()[k] ? 1 : 0); break;
    }
  }
}

struct Args {
  std::vector<std::string> libs, registers, calls;
  std::map<std::string, std::vector<R::BackendOption>> options;
  std::string method = "forward", program;
};

// `ID:KEY=VALUE` into args.options; false when it is not one.
bool add_option(const std::string& spec, Args& args) {
  const std::size_t colon = spec.find(':'), eq = spec.find('=');
  if (colon == std::string::npos || eq == std::string::npos || eq < colon ||
      eq - colon - 1 >= R::kMaxOptionKeyLength || spec.size() - eq - 1 >= R::kMaxOptionValueLength) {
    return false;
  }
  R::BackendOption option;
  std::memcpy(option.key, spec.data() + colon + 1, eq - colon - 1);
  std::array<char, R::kMaxOptionValueLength> value{};
  std::memcpy(value.data(), spec.data() + eq + 1, spec.size() - eq - 1);
  option.value = value;
  args.options[spec.substr(0, colon)].push_back(option);
  return true;
}

// The command line; false on a usage error.
bool parse(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--lib" && has_value) {
      args.libs.push_back(argv[++i]);
    } else if (arg == "--register" && has_value) {
      args.registers.push_back(argv[++i]);
    } else if (arg == "--method" && has_value) {
      args.method = argv[++i];
    } else if (arg == "--option" && has_value) {
      if (!add_option(argv[++i], args)) return false;
    } else if (arg.rfind("--", 0) == 0) {
      return false;
    } else if (args.program.empty()) {
      args.program = arg;
    } else {
      args.calls.push_back(arg);
    }
  }
  return !args.program.empty();
}

// The libraries loaded and the fat delegate registered under the ids asked; 0, or the exit status.
int load_libraries(const Args& args) {
  for (const std::string& lib : args.libs) {
    if (dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      std::fprintf(stderr, "cannot load %s: %s\n", lib.c_str(), dlerror());
      return 1;
    }
  }
  for (const std::string& id : args.registers) {
    using Register = int (*)(const char*);
    auto fn = reinterpret_cast<Register>(dlsym(RTLD_DEFAULT, "fatpte_register_fat_backend"));
    if (fn == nullptr) return std::fprintf(stderr, "no loaded library has fatpte_register_fat_backend\n"), 1;
    if (fn(id.c_str()) != 0) return std::fprintf(stderr, "fatpte_register_fat_backend(%s) failed\n", id.c_str()), 1;
  }
  return 0;
}

// Call `c` of the method, its inputs read from `files`, its outputs printed; 0, or the exit status.
int run_call(Module& module, const Args& args, const R::MethodMeta& meta, std::size_t c) {
  const std::vector<std::string> files = split(args.calls[c], ',');
  if (files.size() != meta.num_inputs()) {
    return std::fprintf(stderr, "call %zu: the method takes %zu inputs\n", c, meta.num_inputs()), 2;
  }
  std::vector<std::vector<char>> data(files.size());
  std::vector<std::vector<R::etensor::TensorImpl::SizesType>> sizes(files.size());
  std::vector<std::vector<R::etensor::TensorImpl::DimOrderType>> orders(files.size());
  std::vector<std::unique_ptr<R::etensor::TensorImpl>> impls;
  std::vector<R::EValue> inputs;
  for (std::size_t i = 0; i < files.size(); ++i) {
    auto info = meta.input_tensor_meta(i);
    if (!info.ok()) return std::fprintf(stderr, "input %zu is no tensor\n", i), 2;
    std::ifstream in(files[i], std::ios::binary);
    data[i].assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (data[i].size() != info->nbytes()) {
      return std::fprintf(stderr, "call %zu input %zu: %zu bytes, the method takes %zu\n", c, i, data[i].size(),
                          info->nbytes()), 2;
    }
    sizes[i].assign(info->sizes().begin(), info->sizes().end());
    orders[i].assign(info->dim_order().begin(), info->dim_order().end());
    impls.emplace_back(new R::etensor::TensorImpl(info->scalar_type(), static_cast<ssize_t>(sizes[i].size()),
                                                  sizes[i].data(), data[i].data(), orders[i].data()));
    inputs.emplace_back(executorch::aten::Tensor(impls.back().get()));
  }
  auto outputs = module.execute(args.method, inputs);
  if (!outputs.ok()) {
    return std::fprintf(stderr, "call %zu failed: error 0x%x\n", c, static_cast<unsigned>(outputs.error())), 1;
  }
  for (std::size_t k = 0; k < outputs->size(); ++k) {
    std::printf("call %zu output %zu:", c, k);
    if ((*outputs)[k].isTensor()) print_tensor((*outputs)[k].toTensor());
    std::printf("\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse(argc, argv, args)) return usage();
  R::runtime_init();
  if (const int failed = load_libraries(args)) return failed;
  R::LoadBackendOptionsMap option_map;
  for (auto& kv : args.options) {
    if (option_map.set_options(kv.first.c_str(), R::Span<R::BackendOption>(kv.second.data(), kv.second.size())) !=
        R::Error::Ok) {
      return std::fprintf(stderr, "too many backends with options\n"), 2;
    }
  }
  Module module(args.program, Module::LoadMode::Mmap);
  const R::Error loaded = module.load_method(args.method, nullptr, nullptr, &option_map);
  if (loaded != R::Error::Ok) {
    return std::fprintf(stderr, "load_method(%s) failed: error 0x%x\n", args.method.c_str(),
                        static_cast<unsigned>(loaded)), 1;
  }
  auto meta = module.method_meta(args.method);
  if (!meta.ok()) return std::fprintf(stderr, "no method %s\n", args.method.c_str()), 1;
  for (std::size_t c = 0; c < args.calls.size(); ++c) {
    if (const int failed = run_call(module, args, meta.get(), c)) return failed;
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}
