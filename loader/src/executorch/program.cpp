// Reading an ExecuTorch program's methods and delegates (executorch/program.hpp). This file is compiled
// with hidden visibility (loader/CMakeLists.txt): flatc's generated code lives in ExecuTorch's
// own namespace `executorch_flatbuffer`, and its inline functions must never interpose on, or be
// interposed by, the copies inside libexecutorch.so.
#include "executorch/program.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <string>

#include "common/bytes.hpp"
#include "fatpte/format_generated.h"
#include "program_generated.h"

namespace fatpte {
namespace et {
namespace {

namespace F = ::executorch_flatbuffer;

constexpr char kIdentifier[] = "ET12";
constexpr char kHeaderMagic[] = "eh00";
constexpr std::uint32_t kMinHeaderLength = 24;
constexpr std::uint32_t kMaxHeaderLength = 4096;
constexpr std::uint32_t kHeaderAt = 8;  // the extended header starts after the root offset and identifier

}  // namespace

const MethodInfo* ProgramInfo::method(const std::string& name) const {
  for (const MethodInfo& m : methods) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

Result<ProgramInfo> read_program(Bytes payload, std::uint64_t at, const std::string& field) {
  const std::uint8_t* p = payload.data;
  const std::uint64_t n = payload.size;
  FATPTE_CHECK(n >= 8, Error::ET_TRUNCATED, at, field, "the program is %" PRIu64 " bytes, shorter than its root offset and identifier", n);
  FATPTE_CHECK(std::memcmp(p + 4, kIdentifier, 4) == 0, Error::ET_BAD_IDENTIFIER, at + 4, field,
               "the payload's bytes 4..8 are not the ExecuTorch program identifier 'ET12'");
  std::uint64_t flatbuffer_size = n;
  if (n >= kHeaderAt + 8 && std::memcmp(p + kHeaderAt, kHeaderMagic, 4) == 0) {
    const std::uint32_t length = detail::read_u32le(p + kHeaderAt + 4);
    FATPTE_CHECK(length >= kMinHeaderLength && length <= kMaxHeaderLength, Error::ET_BAD_HEADER, at + kHeaderAt + 4,
                 field, "the extended header's length is %u, outside %u..%u", length, kMinHeaderLength,
                 kMaxHeaderLength);
    FATPTE_CHECK(detail::in_bounds(kHeaderAt, length, n), Error::ET_TRUNCATED, at + kHeaderAt, field,
                 "the program is %" PRIu64 " bytes, shorter than its extended header (%u bytes at 8)", n, length);
    const std::uint64_t program_size = detail::read_u64le(p + kHeaderAt + 8);
    const std::uint64_t segment_base = detail::read_u64le(p + kHeaderAt + 16);
    FATPTE_CHECK(program_size >= kHeaderAt + length && program_size <= n, Error::ET_BAD_HEADER, at + kHeaderAt + 8,
                 field, "program_size %" PRIu64 " does not cover the header (%u bytes) or exceeds the program (%" PRIu64 " bytes)",
                 program_size, kHeaderAt + length, n);
    FATPTE_CHECK(segment_base == 0 || (segment_base >= program_size && segment_base <= n), Error::ET_BAD_HEADER,
                 at + kHeaderAt + 16, field,
                 "segment_base_offset %" PRIu64 " lies outside [program_size %" PRIu64 ", %" PRIu64 "]", segment_base,
                 program_size, n);
    if (length >= 32) {
      const std::uint64_t segment_data_size = detail::read_u64le(p + kHeaderAt + 24);
      FATPTE_CHECK(detail::in_bounds(segment_base, segment_data_size, n), Error::ET_BAD_HEADER, at + kHeaderAt + 24,
                   field, "segment data (%" PRIu64 " bytes at %" PRIu64 ") reaches past the program's end at %" PRIu64,
                   segment_data_size, segment_base, n);
    }
    flatbuffer_size = program_size;
  }
  FATPTE_CHECK(flatbuffer_size < FLATBUFFERS_MAX_BUFFER_SIZE, Error::ET_FLATBUFFER_TOO_COMPLEX, at, field,
               "the program's flatbuffer is %" PRIu64 " bytes, beyond the flatbuffers limit of 2 GiB", flatbuffer_size);
  // The reference verifier with its default bounds (depth 64, 1,000,000 tables), as for the manifest.
  ::flatbuffers::Verifier verifier(p, static_cast<std::size_t>(flatbuffer_size));
  FATPTE_CHECK(F::VerifyProgramBuffer(verifier), Error::ET_FLATBUFFER_OUT_OF_BOUNDS, at, field,
               "the program is not a well-formed flatbuffer of ExecuTorch's schema/program.fbs (the flatbuffers "
               "verifier refused its first %" PRIu64 " bytes)",
               flatbuffer_size);
  const F::Program* program = F::GetProgram(p);
  const std::uint64_t segment_base = flatbuffer_size == n ? 0 : detail::read_u64le(p + kHeaderAt + 16);
  // A delegate's processed data, when it lies within the program.
  const auto processed = [&](const F::BackendDelegate* delegate) -> Bytes {
    const F::BackendDelegateDataReference* ref = delegate->processed();
    if (ref == nullptr) return Bytes{};
    if (ref->location() == F::DataLocation_INLINE) {
      const auto* inline_data = program->backend_delegate_data();
      if (inline_data == nullptr || ref->index() >= inline_data->size()) return Bytes{};
      const auto* data = inline_data->Get(ref->index())->data();
      return data == nullptr ? Bytes{} : Bytes{data->data(), data->size()};
    }
    const auto* segments = program->segments();
    if (segment_base == 0 || segments == nullptr || ref->index() >= segments->size()) return Bytes{};
    const F::DataSegment* segment = segments->Get(ref->index());
    if (segment->offset() > n - segment_base || !detail::in_bounds(segment_base + segment->offset(), segment->size(), n)) {
      return Bytes{};
    }
    return Bytes{p + segment_base + segment->offset(), segment->size()};
  };
  ProgramInfo info;
  const auto* plans = program->execution_plan();
  if (plans == nullptr) return info;
  for (::flatbuffers::uoffset_t i = 0; i < plans->size(); ++i) {
    const F::ExecutionPlan* plan = plans->Get(i);
    FATPTE_CHECK(plan->name() != nullptr, Error::ET_BAD_VALUE, at, field, "execution_plan[%u] has no name", i);
    MethodInfo m;
    m.name = plan->name()->str();
    if (plan->delegates() != nullptr) {
      for (::flatbuffers::uoffset_t d = 0; d < plan->delegates()->size(); ++d) {
        const F::BackendDelegate* delegate = plan->delegates()->Get(d);
        FATPTE_CHECK(delegate->id() != nullptr && delegate->id()->size() > 0, Error::ET_BAD_VALUE, at, field,
                     "execution_plan[%u] (method '%s') delegates[%u] has no backend id", i, m.name.c_str(), d);
        std::string id = delegate->id()->str();
        if (std::find(m.backend_ids.begin(), m.backend_ids.end(), id) == m.backend_ids.end()) {
          m.backend_ids.push_back(std::move(id));
        }
        const Bytes data = processed(delegate);
        if (data.size >= 4 && std::memcmp(data.data, format::kMagic, 4) == 0) m.fat_payloads.push_back(data);
      }
    }
    info.methods.push_back(std::move(m));
  }
  return info;
}

const ::executorch_flatbuffer::Program* program_root(const void* flatbuffer) { return F::GetProgram(flatbuffer); }

}  // namespace et
}  // namespace fatpte
