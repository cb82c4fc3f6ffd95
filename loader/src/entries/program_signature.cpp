// A program's signature and its agreement with a stated one (entries/program_signature.hpp).
// Compiled with hidden visibility, as executorch/program.cpp is: flatc's code for the program
// lives in ExecuTorch's own namespace.
#include "entries/program_signature.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "executorch/program.hpp"
#include "fatpte/format_generated.h"
#include "program_generated.h"
#include "entries/native_state.hpp"
#include "entries/nesting.hpp"
#include "value/scalar_type.hpp"

namespace fatpte {
namespace entries {
namespace {

namespace F = ::executorch_flatbuffer;
namespace M = nfat::manifest;

constexpr std::size_t kMaxTextBytes = manifest_schema::kMaxTextBytes;

// fatpte/executorch/pte.py VALUE_KINDS: the KernelTypes union's tags as fatpte names them.
const char* value_kind(F::KernelTypes type) {
  static const char* const kKinds[] = {"none",     "null",        "int",       "bool",
                                       "double",   "tensor",      "string",    "int_list",
                                       "double_list", "bool_list", "tensor_list", "optional_tensor_list"};
  const auto tag = static_cast<std::size_t>(type);
  return tag < sizeof kKinds / sizeof kKinds[0] ? kKinds[tag] : "unknown";
}

// What signature.py reads of one method: each value's spec, which values are inputs, the
// operators' names, the kernel calls' arguments and the delegates called, in call order.
class Plan {
 public:
  explicit Plan(const F::ExecutionPlan* plan) : plan_(plan) {
    if (plan->inputs() != nullptr) inputs_.insert(plan->inputs()->begin(), plan->inputs()->end());
  }

  DerivedTensor spec(std::int32_t index) const {
    const F::EValue* value = plan_->values()->Get(static_cast<::flatbuffers::uoffset_t>(index));
    const F::Tensor* t = value->val_as_Tensor();
    if (t == nullptr) return DerivedTensor{value_kind(value->val_type()), {}, std::nullopt};
    DerivedTensor out{program_dtype_name(static_cast<std::int8_t>(t->scalar_type())), {}, std::nullopt};
    for (const std::int32_t size : *t->sizes()) out.shape.push_back(DerivedDim{size, ""});
    return out;
  }

  // mutable_buffer_values: value index -> fully qualified name ("" for none), in value order.
  std::vector<std::pair<std::int32_t, std::string>> buffers() const {
    std::set<std::int32_t> found;
    for_each_instruction([&](const F::Instruction* ins) {
      const F::KernelCall* call = ins->instr_args_as_KernelCall();
      if (call == nullptr || call->args() == nullptr || call->args()->size() == 0) return;
      const std::int32_t target = call->args()->Get(0);
      if (operator_name(call->op_index()) != "aten::copy_" || target != call->args()->Get(call->args()->size() - 1)) {
        return;
      }
      if (planned_state(target)) found.insert(target);
    });
    const auto* values = plan_->values();
    for (::flatbuffers::uoffset_t j = 0; values != nullptr && j < values->size(); ++j) {
      if (!fqn(static_cast<std::int32_t>(j)).empty() && planned_state(static_cast<std::int32_t>(j))) {
        found.insert(static_cast<std::int32_t>(j));
      }
    }
    std::vector<std::pair<std::int32_t, std::string>> out;
    for (const std::int32_t j : found) out.emplace_back(j, fqn(j));
    return out;
  }

  // The delegates the method calls, each once, in the order it first calls them.
  std::vector<std::int32_t> called_delegates() const {
    std::vector<std::int32_t> out;
    for_each_instruction([&](const F::Instruction* ins) {
      const F::DelegateCall* call = ins->instr_args_as_DelegateCall();
      if (call != nullptr && std::find(out.begin(), out.end(), call->delegate_index()) == out.end()) {
        out.push_back(call->delegate_index());
      }
    });
    return out;
  }

 private:
  template <typename Visit>
  void for_each_instruction(const Visit& visit) const {
    if (plan_->chains() == nullptr) return;
    for (const F::Chain* chain : *plan_->chains()) {
      if (chain->instructions() == nullptr) continue;
      for (const F::Instruction* ins : *chain->instructions()) visit(ins);
    }
  }
  // The operator's name, without what Python's split(".")[0] drops (its overload, or anything
  // after a dot in the name itself).
  std::string operator_name(std::int32_t op) const {
    const F::Operator* o = plan_->operators()->Get(static_cast<::flatbuffers::uoffset_t>(op));
    const std::string name = o->name() == nullptr ? "" : o->name()->str();
    return name.substr(0, name.find('.'));
  }
  const F::Tensor* tensor(std::int32_t index) const {
    return plan_->values()->Get(static_cast<::flatbuffers::uoffset_t>(index))->val_as_Tensor();
  }
  bool planned_state(std::int32_t index) const {
    const F::Tensor* t = tensor(index);
    return t != nullptr && t->allocation_info() != nullptr && inputs_.count(index) == 0;
  }
  std::string fqn(std::int32_t index) const {
    const F::Tensor* t = tensor(index);
    if (t == nullptr || t->extra_tensor_info() == nullptr) return "";
    const ::flatbuffers::String* name = t->extra_tensor_info()->fully_qualified_name();
    return name == nullptr ? "" : name->str();
  }

  const F::ExecutionPlan* plan_;
  std::set<std::int32_t> inputs_;
};

// The native (NPTG) payloads a called delegate carries (signature.py _native_payloads): its own
// payload, or the NPTG entries of the fat delegate container it is, in table order. A container
// that fails the structural pass fails as Python's Container.from_buffer does, at `at` plus its
// offset in that container.
Status native_payloads(Bytes data, std::uint64_t at, const std::string& field, std::vector<Bytes>& out) {
  if (data.size >= 8 && std::memcmp(data.data + 4, "NPTG", 4) == 0) {
    out.push_back(data);
    return Status();
  }
  if (data.size < 4 || std::memcmp(data.data, format::kMagic, 4) != 0) return Status();
  auto st = read_fat_container(data, at, field);
  if (!st.ok()) return st.error();
  for (const Entry& e : st.value().entries) {
    if (std::memcmp(e.payload_kind.data(), "NPTG", 4) == 0) out.push_back(Bytes{data.data + e.offset, e.size});
  }
  return Status();
}

// The typed buffers of each native payload a called delegate carries, after the method's own,
// each fully qualified name once.
Status delegate_buffers(const Plan& p, const et::MethodInfo& info, std::uint64_t at, const std::string& field,
                        DerivedMethod& m) {
  std::set<std::string> named;
  for (const DerivedTensor& t : m.buffers) {
    if (t.name) named.insert(*t.name);
  }
  for (const std::int32_t d : p.called_delegates()) {
    std::vector<Bytes> payloads;
    FATPTE_RETURN_IF_ERROR(native_payloads(info.delegates[static_cast<std::size_t>(d)], at, field, payloads));
    for (const Bytes& payload : payloads) {
      const auto buffers = native_buffers(payload);
      if (!buffers) {
        m.delegate_state = true;
        continue;
      }
      for (const NativeBuffer& b : *buffers) {
        if (!b.typed || !named.insert(b.fqn).second) continue;
        DerivedTensor t{b.dtype, {}, b.fqn};
        for (const NativeDim& dim : b.shape) t.shape.push_back(DerivedDim{dim.size, dim.symbol});
        m.buffers.push_back(std::move(t));
      }
    }
  }
  return Status();
}

Result<DerivedMethod> method_signature(const F::ExecutionPlan* plan, const et::MethodInfo& info, std::uint64_t at,
                                       const std::string& field) {
  const Plan p(plan);
  DerivedMethod m;
  m.name = info.name;
  std::set<std::int32_t> state;
  for (const auto& [index, name] : p.buffers()) {
    DerivedTensor t = p.spec(index);
    if (!name.empty()) t.name = name;
    m.buffers.push_back(std::move(t));
    state.insert(index);
  }
  if (plan->inputs() != nullptr) {
    for (const std::int32_t i : *plan->inputs()) m.inputs.push_back(p.spec(i));
  }
  if (plan->outputs() != nullptr) {
    for (const std::int32_t i : *plan->outputs()) {
      if (state.count(i) == 0) m.outputs.push_back(p.spec(i));
    }
  }
  FATPTE_RETURN_IF_ERROR(delegate_buffers(p, info, at, field, m));
  return m;
}

// What Signature.from_mapping refuses of a derived signature, in its order: per method its name
// (non-empty, within the text limit, not given before), then its buffers' names.
Status mapping_rules(const std::vector<DerivedMethod>& methods, std::uint64_t at, const std::string& field) {
  for (std::size_t i = 0; i < methods.size(); ++i) {
    const std::string& name = methods[i].name;
    FATPTE_CHECK(!name.empty() && name.size() <= kMaxTextBytes, Error::INVALID_ARGUMENT, at, field,
                 "signature.methods[%zu].name: must be a non-empty string of at most %zu bytes", i, kMaxTextBytes);
    for (std::size_t k = 0; k < i; ++k) {
      FATPTE_CHECK(methods[k].name != name, Error::INVALID_ARGUMENT, at, field,
                   "signature.methods[%zu].name: method '%s' is listed twice", i, name.c_str());
    }
    for (std::size_t j = 0; j < methods[i].buffers.size(); ++j) {
      const DerivedTensor& b = methods[i].buffers[j];
      FATPTE_CHECK(!b.name || (!b.name->empty() && b.name->size() <= kMaxTextBytes), Error::INVALID_ARGUMENT, at,
                   field, "signature.methods[%zu].buffers[%zu].name: must be a non-empty string of at most %zu bytes",
                   i, j, kMaxTextBytes);
      for (std::size_t k = 0; k < b.shape.size(); ++k) {
        const DerivedDim& d = b.shape[k];
        FATPTE_CHECK(d.symbol.empty() ? d.size >= 0 : d.symbol.size() <= kMaxTextBytes, Error::INVALID_ARGUMENT, at,
                     field, "signature.methods[%zu].buffers[%zu].shape[%zu]: must be an integer from 0 or a symbol", i,
                     j, k);
      }
    }
  }
  return Status();
}

}  // namespace

Result<std::vector<DerivedMethod>> program_signature(Bytes payload, const et::ProgramInfo& info, std::uint64_t at,
                                                     const std::string& field) {
  const F::Program* program = F::GetProgram(payload.data);
  std::vector<DerivedMethod> out;
  const auto* plans = program->execution_plan();
  for (::flatbuffers::uoffset_t i = 0; plans != nullptr && i < plans->size(); ++i) {
    auto method = method_signature(plans->Get(i), info.methods[i], at, field);
    if (!method.ok()) return method.error();
    out.push_back(std::move(method.value()));
  }
  FATPTE_RETURN_IF_ERROR(mapping_rules(out, at, field));
  return out;
}

namespace {

std::string dims_text(const std::vector<std::string>& dims) {
  std::string out;
  for (const std::string& d : dims) out += (out.empty() ? "" : ", ") + d;
  return "[" + out + "]";
}

// Whether the stated tensor (its program_dtype as its dtype) agrees with the derived one.
bool tensors_agree(const M::TensorSpec* a, const DerivedTensor& b) {
  const ::flatbuffers::String* dtype = a->program_dtype() != nullptr ? a->program_dtype() : a->dtype();
  if (dtype->str() != b.dtype) return false;
  const std::size_t rank = a->shape() == nullptr ? 0 : a->shape()->size();
  if (rank != b.shape.size()) return false;
  for (std::size_t k = 0; k < rank; ++k) {
    const M::Dim* d = a->shape()->Get(static_cast<::flatbuffers::uoffset_t>(k));
    const DerivedDim& e = b.shape[k];
    const bool same = d->symbol() != nullptr ? d->symbol()->str() == e.symbol
                                             : e.symbol.empty() && e.size >= 0 &&
                                                   d->size() == static_cast<std::uint64_t>(e.size);
    if (!same) return false;
  }
  return a->name() == nullptr || !b.name || a->name()->str() == *b.name;
}

std::string tensor_text(const DerivedTensor& t) {
  std::vector<std::string> dims;
  for (const DerivedDim& d : t.shape) dims.push_back(d.symbol.empty() ? std::to_string(d.size) : d.symbol);
  return (t.name ? *t.name + ": " : "") + t.dtype + dims_text(dims);
}

using Specs = ::flatbuffers::Vector<::flatbuffers::Offset<M::TensorSpec>>;

std::string part_difference(const char* part, const Specs* stated, const std::vector<DerivedTensor>& derived) {
  const std::size_t n = stated == nullptr ? 0 : stated->size();
  if (n != derived.size()) {
    return std::to_string(n) + " vs " + std::to_string(derived.size()) + " " + part;
  }
  for (std::size_t j = 0; j < n; ++j) {
    if (!tensors_agree(stated->Get(static_cast<::flatbuffers::uoffset_t>(j)), derived[j])) {
      return std::string(part) + "[" + std::to_string(j) + "] differs from the program's " + tensor_text(derived[j]);
    }
  }
  return "";
}

}  // namespace

std::string signature_difference(const M::Signature& stated, const std::vector<DerivedMethod>& derived) {
  std::vector<std::string> a, b;
  if (stated.methods() != nullptr) {
    for (const M::Method* m : *stated.methods()) a.push_back(m->name()->str());
  }
  for (const DerivedMethod& m : derived) b.push_back(m.name);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a != b) return "the methods stated are not the program's";
  for (const M::Method* ma : *stated.methods()) {
    const DerivedMethod* mb = nullptr;
    for (const DerivedMethod& m : derived) {
      if (m.name == ma->name()->str()) {
        mb = &m;
        break;
      }
    }
    std::string what = part_difference("inputs", ma->inputs(), mb->inputs);
    if (what.empty()) what = part_difference("outputs", ma->outputs(), mb->outputs);
    if (what.empty() && !mb->delegate_state) what = part_difference("buffers", ma->buffers(), mb->buffers);
    if (!what.empty()) return "method '" + mb->name + "': " + what;
  }
  return "";
}

}  // namespace entries
}  // namespace fatpte
