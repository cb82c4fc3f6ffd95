// How deep fat delegates nest inside a program entry (entries/nesting.hpp).
#include "entries/nesting.hpp"

#include <cstring>
#include <string>
#include <unordered_map>

#include "entries/program_reader.hpp"
#include "fatpte/format_generated.h"

namespace fatpte {
namespace entries {
namespace {

// Where each container and program read without finding one too deep starts in the file, with
// the deepest depth it was read at: one met again at that depth or less holds nothing too deep.
using Clean = std::unordered_map<std::uint64_t, std::uint32_t>;

Status container_too_deep(Bytes buf, std::uint32_t depth, std::uint64_t at, const std::string& path, Clean& clean);

Status program_too_deep(Bytes program, const et::ProgramInfo& info, std::uint32_t depth, std::uint64_t at,
                        const std::string& path, Clean& clean) {
  for (const et::MethodInfo& m : info.methods) {
    for (std::size_t d = 0; d < m.delegates.size(); ++d) {
      const Bytes data = m.delegates[d];
      if (data.size < 4 || std::memcmp(data.data, format::kMagic, 4) != 0) continue;
      const auto offset = static_cast<std::uint64_t>(data.data - program.data);
      FATPTE_RETURN_IF_ERROR(container_too_deep(data, depth, at + offset,
                                                path + "delegates[" + std::to_string(d) + "].payload", clean));
    }
  }
  return Status();
}

Status nested_entry(Bytes payload, std::uint32_t depth, std::uint64_t at, const std::string& inner, Clean& clean) {
  if (payload.size >= 4 && std::memcmp(payload.data, format::kMagic, 4) == 0) {
    return container_too_deep(payload, depth + 1, at, inner, clean);
  }
  if (payload.size < 8 || std::memcmp(payload.data + 4, "ET12", 4) != 0) return Status();
  const auto seen = clean.find(at);
  if (seen != clean.end() && seen->second >= depth + 1) return Status();
  // Python's reader first (entries/program_reader.hpp), for its code at its offset.
  auto nested = read_program_validated(payload, at, inner);
  if (!nested.ok()) {
    const Status& e = nested.error();
    return Status(e.code(), e.offset(), inner, "a nested program does not read as an ExecuTorch program: " +
                  e.message());
  }
  FATPTE_RETURN_IF_ERROR(program_too_deep(payload, nested.value(), depth + 1, at, inner + ".", clean));
  clean[at] = depth + 1;
  return Status();
}

Status container_too_deep(Bytes buf, std::uint32_t depth, std::uint64_t at, const std::string& path, Clean& clean) {
  FATPTE_CHECK(depth <= format::kMaxFatDelegateDepth, Error::FAT_DELEGATE_TOO_DEEP, at, path,
               "a fat delegate at depth %u: fat delegates nest at most %u levels deep (specs/executorch.md "
               "section 8)", depth, static_cast<unsigned>(format::kMaxFatDelegateDepth));
  const auto seen = clean.find(at);
  if (seen != clean.end() && seen->second >= depth) return Status();
  auto st = read_structure(buf);
  if (st.ok()) {  // a container that does not read is refused with the reason when it is validated
    for (const Entry& e : st.value().entries) {
      const Bytes payload{buf.data + e.offset, e.size};
      FATPTE_RETURN_IF_ERROR(nested_entry(payload, depth, at + e.offset,
                                          path + ".entries[" + std::to_string(e.index) + "].payload", clean));
    }
  }
  clean[at] = depth;
  return Status();
}

}  // namespace

Status check_nesting(Bytes payload, const et::ProgramInfo& info, std::uint64_t at, const std::string& path) {
  Clean clean;
  return program_too_deep(payload, info, 1, at, path, clean);
}

Result<Structure> read_fat_container(Bytes data, std::uint64_t at, const std::string& field) {
  auto st = read_structure(data);
  if (st.ok()) return st;
  const Status& e = st.error();
  return Status(e.code(), at + (e.offset() == kNoOffset ? 0 : e.offset()), field,
                "a fat delegate's container does not read: " + e.message());
}

}  // namespace entries
}  // namespace fatpte
