// Isolated qualification (run/qualify.hpp).
#include "run/qualify.hpp"

#include <cstdlib>
#include <string>
#include <vector>

#include "container/golden.hpp"
#include "fatpte/profile.hpp"

namespace fatpte {
namespace detail {
namespace {

// The variables `names` of this process's environment, as NAME=VALUE.
std::vector<std::string> passed_environment(const std::vector<std::string>& names) {
  std::vector<std::string> env;
  for (const std::string& name : names) {
    const char* value = std::getenv(name.c_str());
    if (value != nullptr && name.find('=') == std::string::npos) env.push_back(name + "=" + value);
  }
  return env;
}

// The child's calls.json: the application's one call, or none (only the load).
std::string calls_json(const std::vector<Tensor>& inputs) {
  if (inputs.empty()) return "[]\n";
  std::string out = "[{\"inputs\": [";
  for (std::size_t i = 0; i < inputs.size(); ++i) out += (i ? ", " : "") + tensor_json(inputs[i]);
  return out + "]}]\n";
}

// The child's arguments after the program: what to load and how, as this load would.
Status child_arguments(const Container& c, const Entry& e, const DeviceProfile& device, const LoadOptions& options,
                       ScratchFolder& scratch, std::vector<std::string>& args) {
  std::string file = c.path();
  if (file.empty()) {
    FATPTE_CHECK(!c.partial(), Error::INVALID_ARGUMENT, kNoOffset, "isolate",
                 "a container read through the C reader cannot be qualified in a child process; load it from a file "
                 "or from memory");
    file = scratch.write("container.nfat", c.bytes().data, static_cast<std::size_t>(c.bytes().size));
  }
  const std::string profile = canonical_json(device);
  const std::string device_file = scratch.write("device.json", profile.data(), profile.size());
  FATPTE_CHECK(!file.empty() && !device_file.empty(), Error::IO_ERROR, kNoOffset, "isolate",
               "cannot write the files of an isolated qualification in a temporary folder ($TMPDIR or /tmp)");
  args.insert(args.end(), {file, "--entry", e.name, "--no-fallback", "--method", options.method, "--device",
                           device_file});
  if (has_golden_calls(c, e.index, options.method)) {
    args.push_back("--self-test");
  } else {
    const std::string calls = calls_json(options.isolate_inputs);
    const std::string calls_file = scratch.write("calls.json", calls.data(), calls.size());
    FATPTE_CHECK(!calls_file.empty(), Error::IO_ERROR, kNoOffset, "isolate",
                 "cannot write the call of an isolated qualification in a temporary folder ($TMPDIR or /tmp)");
    args.insert(args.end(), {"--inputs", calls_file});
  }
  if (!options.use_build_default) args.push_back("--no-default-backends");
  for (const std::string& dir : backend_search_path(options)) args.insert(args.end(), {"--backend-path", dir});
  for (const auto& [id, library] : options.libraries) args.insert(args.end(), {"--backend-lib", id + "=" + library});
  return Status();
}

}  // namespace

Qualification qualify_isolated(const Container& c, const Entry& e, const DeviceProfile& device,
                               const LoadOptions& options) {
  Qualification q;
  q.kind = Qualification::Kind::kFail;
  std::vector<std::string> argv = options.isolate_launcher;
  argv.push_back(qualifier_program(options));
  if (argv.back().empty()) {
    q.detail = "no qualifier program: fatpte-run is not beside libfatpte (" + own_library_dir() +
               ") nor in ../bin; name it (LoadOptions::qualifier)";
    return q;
  }
  ScratchFolder scratch;
  const Status args = child_arguments(c, e, device, options, scratch, argv);
  if (!args.ok()) {
    q.detail = args.describe();
    return q;
  }
  return qualification_of(run_child(argv, passed_environment(options.isolate_environment), options.isolate_timeout_ms),
                 options.isolate_timeout_ms);
}

std::string qualifier_program(const LoadOptions& options) {
  if (!options.qualifier.empty()) return options.qualifier;
  return fatpte_run_beside(own_library_dir());
}

Qualification qualify_entry(const Container& c, const Entry& e, const DeviceProfile& device,
                            const LoadOptions& options) {
  if (!options.isolate) return Qualification{};
  return qualify_isolated(c, e, device, options);
}

}  // namespace detail
}  // namespace fatpte
