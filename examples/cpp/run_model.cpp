// run_model MODEL.nfat [--withhold BACKEND_ID] VALUE...: the ExecuTorch Module API on the entry
// of a fat container chosen for this device, one float32 input of shape [1, N], its first output
// printed. The one line that differs from a plain ExecuTorch app is where the Module comes from.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <executorch/extension/tensor/tensor.h>
#include <fatpte/module.hpp>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: run_model MODEL.nfat [--withhold BACKEND_ID] VALUE...\n");
    return 2;
  }
  fatpte::ModuleOptions options;  // this machine, the SDK's backends, fallback to the next entry
  std::vector<float> input;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--withhold" && i + 1 < argc) {
      options.load.libraries[argv[++i]] = "";  // as if this backend's library were not installed
    } else {
      input.push_back(std::stof(arg));
    }
  }
  // A plain ExecuTorch app: executorch::extension::Module module(argv[1]);
  auto loaded = fatpte::load_module(argv[1], options);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", loaded.error().describe().c_str());
    return 3;
  }
  std::printf("entry %s\n", loaded.value()->entry().name.c_str());
  std::unique_ptr<executorch::extension::Module> module = std::move(loaded).value();

  auto tensor = executorch::extension::make_tensor_ptr({1, static_cast<int>(input.size())}, input);
  const auto outputs = module->forward(tensor);
  if (!outputs.ok()) return 1;
  const executorch::aten::Tensor out = outputs.get()[0].toTensor();
  for (ssize_t i = 0; i < out.numel(); ++i) std::printf("%.9g\n", out.const_data_ptr<float>()[i]);
  return 0;
}
