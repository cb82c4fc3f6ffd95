// The fat delegate's `isolate` option (delegate/isolate.hpp).
#include "delegate/isolate.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "container/golden.hpp"
#include "device/origin.hpp"
#include "executorch/program.hpp"
#include "process/child.hpp"

namespace fatpte {
namespace et {
namespace {

namespace R = executorch::runtime;

// The library file that registered ExecuTorch backend `id` in this process; "" when it is the
// program itself or unknown.
std::string library_of(const std::string& id) {
  const R::BackendInterface* backend = R::get_backend_class(id.c_str());
  Dl_info info{};
  if (backend == nullptr || dladdr(static_cast<const void*>(backend), &info) == 0 || info.dli_fname == nullptr) return "";
  const std::string file = info.dli_fname;
  return file.find(".so") == std::string::npos ? "" : file;
}

}  // namespace

IsolateOptions isolate_options(R::BackendInitContext& context) {
  IsolateOptions o;
  R::Result<bool> flag = context.get_runtime_spec<bool>("isolate");
  R::Result<const char*> text = context.get_runtime_spec<const char*>("isolate");
  o.on = flag.ok() ? flag.get()
                   : text.ok() && text.get() != nullptr &&
                         (std::strcmp(text.get(), "1") == 0 || std::strcmp(text.get(), "true") == 0);
  R::Result<int> ms = context.get_runtime_spec<int>("isolate_timeout_ms");
  R::Result<const char*> digits = context.get_runtime_spec<const char*>("isolate_timeout_ms");
  if (ms.ok() && ms.get() > 0) o.timeout_ms = static_cast<std::uint32_t>(ms.get());
  if (digits.ok() && digits.get() != nullptr && std::strlen(digits.get()) <= 9 &&
      std::strspn(digits.get(), "0123456789") == std::strlen(digits.get()) && std::atoi(digits.get()) > 0) {
    o.timeout_ms = static_cast<std::uint32_t>(std::atoi(digits.get()));
  }
  return o;
}

std::string qualify_nested(const Container& c, const Entry& e, Bytes program, const char* method,
                           const IsolateOptions& options) {
  const std::string name = method != nullptr ? method : "forward";
  // The fat delegate's library holds libfatpte's code: origin() is its folder (links resolved).
  const std::string& folder = detail::origin().dir;
  const std::string runner = detail::fatpte_run_beside(folder);
  if (runner.empty()) return "isolated qualification: no fatpte-run beside the fat delegate's library (" + folder + ")";
  detail::ScratchFolder scratch;
  const std::string file = scratch.write("nested.nfat", c.bytes().data, static_cast<std::size_t>(c.bytes().size));
  const std::string none = scratch.write("calls.json", "[]\n", 3);
  if (file.empty() || none.empty()) return "isolated qualification: cannot write the nested container in a temporary folder";
  std::vector<std::string> argv = {runner, file, "--entry", e.name, "--no-fallback", "--method", name};
  if (has_golden_calls(c, e.index, name)) {
    argv.push_back("--self-test");
  } else {
    argv.insert(argv.end(), {"--inputs", none});
  }
  auto info = read_program(program, e.offset, "entries[" + std::to_string(e.index) + "].payload");
  const MethodInfo* m = info.ok() ? info.value().method(name) : nullptr;
  if (m == nullptr && info.ok() && info.value().methods.size() == 1) m = &info.value().methods[0];
  for (const std::string& id : m != nullptr ? m->backend_ids : std::vector<std::string>{}) {
    const std::string library = library_of(id);
    if (!library.empty()) argv.insert(argv.end(), {"--backend-lib", id + "=" + library});
  }
  const detail::Qualification q = detail::qualification_of(detail::run_child(argv, {}, options.timeout_ms),
                                                           options.timeout_ms);
  return q.passed() ? "" : q.describe();
}

}  // namespace et
}  // namespace fatpte
