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
#include "value/scalar_type.hpp"

namespace fatpte {
namespace et {
namespace {

namespace F = ::executorch_flatbuffer;

constexpr char kIdentifier[] = "ET12";
constexpr char kHeaderMagic[] = "eh00";
constexpr std::uint32_t kMinHeaderLength = 24;
constexpr std::uint32_t kMaxHeaderLength = 4096;
constexpr std::uint32_t kHeaderAt = 8;  // the extended header starts after the root offset and identifier
constexpr std::uint64_t kReferenceBudget = 1000000;  // fatpte/executorch/flatbuf.py DEFAULT_BUDGET
constexpr std::uint64_t kSsizeLimit = std::uint64_t{1} << 63;  // an element count must stay below it

// The bytes of one element of each ScalarType fatpte reads (value/scalar_type.hpp), 0 for a code
// it does not define.
std::uint64_t element_size(std::int8_t code) { return program_element_size(code); }

// One method's tensors and value references, checked as fatpte/executorch/pte.py checks them
// (specs/executorch.md sections 3 and 4), in the same order and reported at the same place: the
// code, the table (its offset from the program's first byte, plus `at`), the caller's field, the
// path in the message. ExecuTorch itself checks instruction arguments at load_method, but not the plan's
// inputs and outputs: Method::get_value aborts the process (ET_CHECK) on one past the values at
// set_input or get_output, and a kernel reading an int list whose item is not an int aborts in
// EValue::toInt.
//
// Tables may be shared (n instructions that are one table of m arguments), so every element and
// instruction visited is counted against `budget`, which read_program sets as Python's reader sets
// its own (1,000,000 plus the flatbuffer's size): the work stays linear in the file, and a program
// that exhausts it here exhausts Python's too (E1005; Python counts every element this visits).
class ValueReferences {
 public:
  ValueReferences(const std::uint8_t* program, std::uint64_t at, const std::string& field, const F::ExecutionPlan* plan,
                  ::flatbuffers::uoffset_t index, std::uint64_t& budget)
      : p_(program), at_(at), field_(field), plan_(plan), path_("root.execution_plan[" + std::to_string(index) + "]"),
        values_(plan->values() == nullptr ? 0 : plan->values()->size()), budget_(budget) {}

  // Each tensor's scalar type and sizes, as ExecuTorch's validate_tensor requires them, for every
  // tensor: it lets a dynamic-shape method input that fails pass after a search of the inputs per
  // such value (quadratic in the inputs), and set_input then aborts when MethodMeta cannot size it.
  Status tensors() const {
    FATPTE_RETURN_IF_ERROR(spend(values_, plan_));
    for (std::uint64_t j = 0; j < values_; ++j) {
      const F::EValue* value = plan_->values()->Get(static_cast<::flatbuffers::uoffset_t>(j));
      if (value->val_type() != F::KernelTypes_Tensor) continue;
      const F::Tensor* t = value->val_as_Tensor();
      if (t == nullptr) {
        return fail(Error::ET_BAD_VALUE, where(value), field_, "a tensor value has no tensor (%s.values[%" PRIu64 "].val)",
                    path_.c_str(), j);
      }
      const auto path = [&](const std::string& rest) { return path_ + ".values[" + std::to_string(j) + "].val" + rest; };
      const std::uint64_t element = element_size(static_cast<std::int8_t>(t->scalar_type()));
      if (element == 0) {
        return fail(Error::ET_BAD_VALUE, where(t), field_, "value %d is not defined by the schema's enum (%s)",
                    static_cast<int>(t->scalar_type()), path(".scalar_type").c_str());
      }
      if (t->sizes() == nullptr) return fail(Error::ET_BAD_VALUE, where(t), field_, "a required vector is absent (%s)", path(".sizes").c_str());
      FATPTE_RETURN_IF_ERROR(spend(t->sizes()->size(), t));
      std::uint64_t count = 1;
      for (::flatbuffers::uoffset_t k = 0; k < t->sizes()->size(); ++k) {
        const std::int32_t size = t->sizes()->Get(k);
        if (size < 0) {
          return fail(Error::ET_BAD_VALUE, where(t), field_, "size %d is negative (%s)", size,
                      path(".sizes[" + std::to_string(k) + "]").c_str());
        }
        // count < 2^63 and size < 2^31: the product is checked before it is formed.
        if (size != 0 && count > (kSsizeLimit - 1) / static_cast<std::uint64_t>(size)) {
          return fail(Error::ET_BAD_VALUE, where(t), field_, "the element count passes 2^63 - 1 at size %u (%s)", k,
                      path(".sizes").c_str());
        }
        count *= static_cast<std::uint64_t>(size);
      }
      if (count > UINT64_MAX / element) {
        return fail(Error::ET_BAD_VALUE, where(t), field_, "%" PRIu64 " elements of %" PRIu64 " bytes are past "
                    "2^64 - 1 bytes (%s)", count, element, path(".sizes").c_str());
      }
    }
    return Status();
  }

  // Each int list's items: values, each an int (ExecuTorch boxes them as the list's elements).
  Status int_lists() const {
    FATPTE_RETURN_IF_ERROR(spend(values_, plan_));
    for (std::uint64_t j = 0; j < values_; ++j) {
      const F::IntList* list = plan_->values()->Get(static_cast<::flatbuffers::uoffset_t>(j))->val_as_IntList();
      if (list == nullptr || list->items() == nullptr) continue;
      FATPTE_RETURN_IF_ERROR(spend(list->items()->size(), list));
      for (::flatbuffers::uoffset_t k = 0; k < list->items()->size(); ++k) {
        const std::int64_t item = list->items()->Get(k);
        const auto path = [&] { return path_ + ".values[" + std::to_string(j) + "].val.items[" + std::to_string(k) + "]"; };
        if (!in_values(item)) return outside(item, list, path());
        const F::KernelTypes kind = plan_->values()->Get(static_cast<::flatbuffers::uoffset_t>(item))->val_type();
        if (kind != F::KernelTypes_Int) {
          return fail(Error::ET_BAD_VALUE, where(list), field_, "an int list's item is value %" PRId64 ", a %s, not an int (%s)",
                      item, F::EnumNameKernelTypes(kind), path().c_str());
        }
      }
    }
    return Status();
  }

  // Each chain's inputs, outputs and instructions, then the method's inputs and outputs.
  Status calls() const {
    if (plan_->chains() != nullptr) {
      for (::flatbuffers::uoffset_t c = 0; c < plan_->chains()->size(); ++c) {
        const F::Chain* chain = plan_->chains()->Get(c);
        FATPTE_RETURN_IF_ERROR(spend(1, chain));
        const auto path = [this, c](const char* rest) { return path_ + ".chains[" + std::to_string(c) + "]" + rest; };
        FATPTE_RETURN_IF_ERROR(indices(chain->inputs(), chain, [&] { return path(".inputs"); }));
        FATPTE_RETURN_IF_ERROR(indices(chain->outputs(), chain, [&] { return path(".outputs"); }));
        FATPTE_RETURN_IF_ERROR(instructions(chain, c));
      }
    }
    FATPTE_RETURN_IF_ERROR(indices(plan_->inputs(), plan_, [this] { return path_ + ".inputs"; }));
    return indices(plan_->outputs(), plan_, [this] { return path_ + ".outputs"; });
  }

 private:
  std::uint64_t where(const void* table) const {
    return at_ + static_cast<std::uint64_t>(static_cast<const std::uint8_t*>(table) - p_);
  }
  bool in_values(std::int64_t v) const { return v >= 0 && static_cast<std::uint64_t>(v) < values_; }
  // The paths name what Python's reader names, and are made only for the message of a failure.
  Status outside(std::int64_t v, const void* table, const std::string& path) const {
    return fail(Error::ET_BAD_REFERENCE, where(table), field_,
                "value index %" PRId64 " is outside the %" PRIu64 " values of the method (%s)", v, values_,
                path.c_str());
  }
  Status spend(std::uint64_t n, const void* table) const {
    FATPTE_CHECK(n <= budget_, Error::ET_FLATBUFFER_TOO_COMPLEX, where(table), field_,
                 "checking the program's value references visits more objects than the reader's limit (1,000,000 "
                 "plus the flatbuffer's size): its offsets reach the same tables too many times");
    budget_ -= n;
    return Status();
  }
  template <typename Path>
  Status indices(const ::flatbuffers::Vector<std::int32_t>* v, const void* table, const Path& path) const {
    if (v == nullptr) return Status();
    FATPTE_RETURN_IF_ERROR(spend(v->size(), table));
    for (::flatbuffers::uoffset_t k = 0; k < v->size(); ++k) {
      if (!in_values(v->Get(k))) return outside(v->Get(k), table, path() + "[" + std::to_string(k) + "]");
    }
    return Status();
  }
  // Each instruction's references by kind, as ExecuTorch's Method::init reads them.
  Status instructions(const F::Chain* chain, ::flatbuffers::uoffset_t c) const {
    if (chain->instructions() == nullptr) return Status();
    const std::uint64_t operators = plan_->operators() == nullptr ? 0 : plan_->operators()->size();
    const std::uint64_t delegates = plan_->delegates() == nullptr ? 0 : plan_->delegates()->size();
    for (::flatbuffers::uoffset_t k = 0; k < chain->instructions()->size(); ++k) {
      const F::Instruction* ins = chain->instructions()->Get(k);
      FATPTE_RETURN_IF_ERROR(spend(1, ins));
      if (ins->instr_args() == nullptr) continue;
      const auto path = [&](const char* rest) {
        return path_ + ".chains[" + std::to_string(c) + "].instructions[" + std::to_string(k) + "].instr_args" + rest;
      };
      if (const F::KernelCall* call = ins->instr_args_as_KernelCall()) {
        if (call->op_index() < 0 || static_cast<std::uint64_t>(call->op_index()) >= operators) {
          return fail(Error::ET_BAD_REFERENCE, where(call), field_, "operator index %d is outside the %" PRIu64
                      " operators (%s)", call->op_index(), operators, path(".op_index").c_str());
        }
        FATPTE_RETURN_IF_ERROR(indices(call->args(), call, [&] { return path(".args"); }));
      } else if (const F::DelegateCall* call = ins->instr_args_as_DelegateCall()) {
        if (call->delegate_index() < 0 || static_cast<std::uint64_t>(call->delegate_index()) >= delegates) {
          return fail(Error::ET_BAD_REFERENCE, where(call), field_, "delegate index %d is outside the %" PRIu64
                      " delegates (%s)", call->delegate_index(), delegates, path(".delegate_index").c_str());
        }
        FATPTE_RETURN_IF_ERROR(indices(call->args(), call, [&] { return path(".args"); }));
      } else if (const F::MoveCall* move = ins->instr_args_as_MoveCall()) {
        if (!in_values(move->move_from())) return outside(move->move_from(), move, path(".move_from"));
        if (!in_values(move->move_to())) return outside(move->move_to(), move, path(".move_to"));
      } else if (const F::JumpFalseCall* jump = ins->instr_args_as_JumpFalseCall()) {
        if (!in_values(jump->cond_value_index())) return outside(jump->cond_value_index(), jump, path(".cond_value_index"));
      } else if (const F::FreeCall* free_call = ins->instr_args_as_FreeCall()) {
        if (!in_values(free_call->value_index())) return outside(free_call->value_index(), free_call, path(".value_index"));
      }
    }
    return Status();
  }

  const std::uint8_t* p_;
  std::uint64_t at_;
  const std::string& field_;
  const F::ExecutionPlan* plan_;
  std::string path_;
  std::uint64_t values_;
  std::uint64_t& budget_;
};

// A delegate's fields ExecuTorch's Method::init dereferences without looking: BackendDelegate::Init
// its `processed` reference, PopulateCompileSpecs each compile spec's key and value (SIGSEGV when
// one is absent). Python's reader requires them (E1008), at the same tables.
Status delegate_fields(const F::BackendDelegate* delegate, const std::string& path, const std::uint8_t* p,
                       std::uint64_t at, const std::string& field) {
  const auto where = [&](const void* table) {
    return at + static_cast<std::uint64_t>(static_cast<const std::uint8_t*>(table) - p);
  };
  FATPTE_CHECK(delegate->processed() != nullptr, Error::ET_BAD_VALUE, where(delegate), field,
               "a required table is absent (%s.processed)", path.c_str());
  if (delegate->compile_specs() == nullptr) return Status();
  for (::flatbuffers::uoffset_t k = 0; k < delegate->compile_specs()->size(); ++k) {
    const F::CompileSpec* spec = delegate->compile_specs()->Get(k);
    FATPTE_CHECK(spec->key() != nullptr, Error::ET_BAD_VALUE, where(spec), field,
                 "a required string is absent (%s.compile_specs[%u].key)", path.c_str(), k);
    FATPTE_CHECK(spec->value() != nullptr, Error::ET_BAD_VALUE, where(spec), field,
                 "a required byte vector is absent (%s.compile_specs[%u].value)", path.c_str(), k);
  }
  return Status();
}

}  // namespace

const MethodInfo* ProgramInfo::method(const std::string& name) const {
  for (const MethodInfo& m : methods) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

namespace {

// The identifier and, when present, the extended header: the size of the flatbuffer (the whole
// payload without one, the header's program_size with one), checked against the payload.
Status flatbuffer_extent(Bytes payload, std::uint64_t at, const std::string& field, std::uint64_t& flatbuffer_size) {
  const std::uint8_t* p = payload.data;
  const std::uint64_t n = payload.size;
  FATPTE_CHECK(n >= 8, Error::ET_TRUNCATED, at, field, "the program is %" PRIu64 " bytes, shorter than its root offset and identifier", n);
  FATPTE_CHECK(std::memcmp(p + 4, kIdentifier, 4) == 0, Error::ET_BAD_IDENTIFIER, at + 4, field,
               "the payload's bytes 4..8 are not the ExecuTorch program identifier 'ET12'");
  flatbuffer_size = n;
  if (n < kHeaderAt + 8 || std::memcmp(p + kHeaderAt, kHeaderMagic, 4) != 0) return Status();
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
  return Status();
}

// A delegate's processed data, when it lies within the program; else empty.
Bytes processed_data(const F::Program* program, const F::BackendDelegate* delegate, Bytes payload,
                     std::uint64_t segment_base) {
  const std::uint8_t* p = payload.data;
  const std::uint64_t n = payload.size;
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
}

// Method `i`'s delegates: each one's required fields, its backend id (once per id, in order) and,
// when its processed data is an NFAT container, that container.
Status read_delegates(const F::Program* program, const F::ExecutionPlan* plan, ::flatbuffers::uoffset_t i,
                      Bytes payload, std::uint64_t segment_base, std::uint64_t at, const std::string& field,
                      MethodInfo& m) {
  if (plan->delegates() == nullptr) return Status();
  for (::flatbuffers::uoffset_t d = 0; d < plan->delegates()->size(); ++d) {
    const F::BackendDelegate* delegate = plan->delegates()->Get(d);
    FATPTE_CHECK(delegate->id() != nullptr && delegate->id()->size() > 0, Error::ET_BAD_VALUE, at, field,
                 "execution_plan[%u] (method '%s') delegates[%u] has no backend id", i, m.name.c_str(), d);
    FATPTE_RETURN_IF_ERROR(delegate_fields(delegate, "root.execution_plan[" + std::to_string(i) + "].delegates[" +
                                                         std::to_string(d) + "]", payload.data, at, field));
    std::string id = delegate->id()->str();
    if (std::find(m.backend_ids.begin(), m.backend_ids.end(), id) == m.backend_ids.end()) {
      m.backend_ids.push_back(std::move(id));
    }
    const Bytes data = processed_data(program, delegate, payload, segment_base);
    m.delegates.push_back(data);
    if (data.size >= 4 && std::memcmp(data.data, format::kMagic, 4) == 0) m.fat_payloads.push_back(data);
  }
  return Status();
}

}  // namespace

Result<ProgramInfo> read_program(Bytes payload, std::uint64_t at, const std::string& field) {
  const std::uint8_t* p = payload.data;
  const std::uint64_t n = payload.size;
  std::uint64_t flatbuffer_size = n;
  FATPTE_RETURN_IF_ERROR(flatbuffer_extent(payload, at, field, flatbuffer_size));
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
  ProgramInfo info;
  std::uint64_t budget = kReferenceBudget + flatbuffer_size;
  const auto* plans = program->execution_plan();
  if (plans == nullptr) return info;
  for (::flatbuffers::uoffset_t i = 0; i < plans->size(); ++i) {
    const F::ExecutionPlan* plan = plans->Get(i);
    FATPTE_CHECK(plan->name() != nullptr, Error::ET_BAD_VALUE, at, field, "execution_plan[%u] has no name", i);
    // In the order Python's reader reads a method: values, delegates, chains, inputs and outputs.
    const ValueReferences references(p, at, field, plan, i, budget);
    FATPTE_RETURN_IF_ERROR(references.tensors());
    FATPTE_RETURN_IF_ERROR(references.int_lists());
    MethodInfo m;
    m.name = plan->name()->str();
    FATPTE_RETURN_IF_ERROR(read_delegates(program, plan, i, payload, segment_base, at, field, m));
    FATPTE_RETURN_IF_ERROR(references.calls());
    info.methods.push_back(std::move(m));
  }
  return info;
}

const ::executorch_flatbuffer::Program* program_root(const void* flatbuffer) { return F::GetProgram(flatbuffer); }

}  // namespace et
}  // namespace fatpte
