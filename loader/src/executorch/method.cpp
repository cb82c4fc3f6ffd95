// One ExecuTorch method, loaded and driven (executorch/method.hpp).
#include "executorch/method.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <executorch/runtime/core/exec_aten/util/tensor_util.h>
#include <executorch/runtime/platform/log.h>

#include "executorch/runtime.hpp"
#include "value/adapter.hpp"
#include "value/scalar_type.hpp"

namespace fatpte {
namespace et {
namespace {

namespace R = executorch::runtime;
using TensorImpl = R::etensor::TensorImpl;

const char* tag_name(R::Tag tag) {
  switch (tag) {
    case R::Tag::None: return "None";
    case R::Tag::Tensor: return "Tensor";
    case R::Tag::String: return "String";
    case R::Tag::Double: return "Double";
    case R::Tag::Int: return "Int";
    case R::Tag::Bool: return "Bool";
    default: return "list";
  }
}

bool is_scalar(R::Tag tag) { return tag == R::Tag::Int || tag == R::Tag::Double || tag == R::Tag::Bool; }

// Copies an N-dimensional array of `sizes` between two strided layouts (strides in elements).
void strided_copy(const std::uint8_t* src, const std::vector<std::int64_t>& src_strides, std::uint8_t* dst,
                  const std::vector<std::int64_t>& dst_strides, const std::vector<std::int64_t>& sizes,
                  std::size_t element) {
  const std::size_t rank = sizes.size();
  // The callers' sizes were checked against the method's (set_input) or come from ExecuTorch's own
  // tensor (output): their product fits.
  std::uint64_t total = 1;
  for (std::int64_t s : sizes) total *= static_cast<std::uint64_t>(s);
  std::vector<std::int64_t> index(rank, 0);
  for (std::uint64_t n = 0; n < total; ++n) {
    std::int64_t from = 0, to = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      from += index[d] * src_strides[d];
      to += index[d] * dst_strides[d];
    }
    std::memcpy(dst + static_cast<std::size_t>(to) * element, src + static_cast<std::size_t>(from) * element, element);
    for (std::size_t d = rank; d-- > 0;) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
}

std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& sizes) {
  std::vector<std::int64_t> strides(sizes.size(), 1);
  for (std::size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * std::max<std::int64_t>(sizes[d], 1);
  return strides;
}

// Strides (in elements) of `sizes` laid out in `dim_order` (outermost dimension first).
std::vector<std::int64_t> dim_order_strides(const std::vector<std::int64_t>& sizes,
                                            const std::vector<std::uint8_t>& dim_order) {
  std::vector<std::int64_t> strides(sizes.size(), 1);
  std::int64_t step = 1;
  for (std::size_t k = dim_order.size(); k-- > 0;) {
    strides[dim_order[k]] = step;
    step *= std::max<std::int64_t>(sizes[dim_order[k]], 1);
  }
  return strides;
}

bool is_permutation(const std::vector<std::uint8_t>& order) {
  std::vector<bool> seen(order.size(), false);
  for (std::uint8_t d : order) {
    if (d >= order.size() || seen[d]) return false;
    seen[d] = true;
  }
  return true;
}

Status input_error(std::size_t i, const std::string& what) {
  return fail(Error::INVALID_ARGUMENT, kNoOffset, "inputs[" + std::to_string(i) + "]", "input %zu %s", i, what.c_str());
}

const char* code_name(int code) { return is_dtype(code) ? dtype_name(static_cast<DType>(code)) : nullptr; }

// The input policy for a tensor: input i of the method (`info`) given as ScalarType `code` with
// `rank` sizes. The method's own sizes bound the call's (static shapes equal them, dynamic ones stay
// within their upper bound): a shape past them is refused before a byte is staged, so no count of
// elements can run past what the method planned memory for.
template <typename Size>
Status tensor_fits(const R::TensorInfo& info, std::size_t i, int code, const Size* sizes, std::size_t rank) {
  const int expected = static_cast<int>(info.scalar_type());
  if (code != expected) {
    const char* want = code_name(expected);
    const char* given = code_name(code);
    return input_error(i, std::string("of the method is ") + (want ? want : "another type") + "; the call gives " +
                              (given ? given : "?"));
  }
  if (rank != info.sizes().size()) {
    return input_error(i, "of the method has rank " + std::to_string(info.sizes().size()) + "; the call gives rank " +
                              std::to_string(rank));
  }
  const auto method_sizes = info.sizes();
  for (std::size_t d = 0; d < rank; ++d) {
    if (sizes[d] < 0 || static_cast<std::int64_t>(sizes[d]) > method_sizes[d]) {
      return input_error(i, "has size " + std::to_string(sizes[d]) + " in dimension " + std::to_string(d) +
                                "; the method's is " + std::to_string(method_sizes[d]));
    }
  }
  return Status();
}

// A scalar argument of tag `tag`, given as a tensor of one element.
Result<R::EValue> scalar_value(std::size_t i, R::Tag tag, const Tensor& in) {
  if (in.numel() != 1 || element_size(in.dtype) == 0 || in.data.size() != element_size(in.dtype)) {
    return input_error(i, std::string("is a ") + tag_name(tag) + " value; give it as a tensor of one element, not " +
                              std::to_string(in.numel()));
  }
  const double x = in.as_double(0);
  if (tag == R::Tag::Int) {
    std::int64_t iv = 0;
    if (in.dtype == DType::kInt64) {
      std::memcpy(&iv, in.data.data(), 8);
    } else {
      iv = static_cast<std::int64_t>(x);
    }
    return R::EValue(iv);
  }
  if (tag == R::Tag::Double) return R::EValue(x);
  return R::EValue(x != 0.0);
}

// Output j's comparison with its golden tensor: "" when within its tolerance, else why not.
std::string golden_verdict(std::size_t j, const GoldenComparison& cmp, const GoldenOutputSpec& spec) {
  if (!cmp.problem.empty()) return "output " + std::to_string(j) + ": " + cmp.problem;
  if (cmp.passed) return "";
  char text[160];
  std::snprintf(text, sizeof text, "output %zu: max abs %.3g (rel %.3g) > %.3g + %.3g * max|want| = %.3g", j,
                cmp.max_abs, cmp.max_rel(), spec.atol, spec.rtol, cmp.bound);
  return text;
}

// Output `v` of a golden call against `spec`: "" when within its tolerance, else why not.
std::string golden_output(std::size_t j, const R::EValue& v, const GoldenOutputSpec& spec) {
  std::int8_t type = 0;
  std::vector<std::int64_t> got_sizes;
  std::uint8_t scalar[8] = {0};
  const std::uint8_t* bytes = scalar;
  std::uint64_t nbytes = 8;
  if (v.isTensor()) {
    const executorch::aten::Tensor& out = v.toTensor();
    if (!R::is_contiguous_dim_order(out.dim_order().data(), out.dim())) {
      return "output " + std::to_string(j) + " is not in contiguous dim order";
    }
    type = static_cast<std::int8_t>(out.scalar_type());
    for (auto s : out.sizes()) got_sizes.push_back(s);
    bytes = static_cast<const std::uint8_t*>(out.const_data_ptr());
    nbytes = out.nbytes();
  } else if (v.isInt() || v.isDouble() || v.isBool()) {
    const ScalarType t = v.isInt() ? ScalarType::kLong : v.isDouble() ? ScalarType::kDouble : ScalarType::kBool;
    type = static_cast<std::int8_t>(t);
    const std::int64_t i = v.isInt() ? v.toInt() : 0;
    const double x = v.isDouble() ? v.toDouble() : 0;
    if (v.isInt()) std::memcpy(scalar, &i, 8);
    if (v.isDouble()) std::memcpy(scalar, &x, 8);
    if (v.isBool()) {
      scalar[0] = v.toBool() ? 1 : 0;
      nbytes = 1;
    }
    got_sizes = spec.want.sizes;  // a scalar has the one element it has
  } else {
    return "output " + std::to_string(j) + " is no tensor or scalar";
  }
  return golden_verdict(j, compare_golden(spec, type, got_sizes, bytes, nbytes), spec);
}

// An adapted output, converted back to the signature's dtype (ProgramMethod::output), against `spec`.
std::string golden_tensor(std::size_t j, const Tensor& t, const GoldenOutputSpec& spec) {
  return golden_verdict(j, compare_golden(spec, static_cast<std::int8_t>(t.dtype), t.shape, t.data.data(), t.data.size()),
                        spec);
}

DType dtype_of(const executorch::aten::Tensor& t) { return static_cast<DType>(static_cast<int>(t.scalar_type())); }

// Copies output `from` of the method into the delegate call's `to` (resized when dynamic),
// converted to the signature's dtype where `slot` adapts it.
R::Error copy_output(std::size_t j, const R::EValue& from, R::EValue& to, const EdgeSlot* slot) {
  if (!from.isTensor() || !to.isTensor()) {
    to = from;  // a scalar output
    return R::Error::Ok;
  }
  const executorch::aten::Tensor& src = from.toTensor();
  executorch::aten::Tensor dst = to.toTensor();
  if (slot != nullptr && dtype_of(src) == slot->program && dtype_of(dst) == slot->call) {
    if (!std::equal(src.sizes().begin(), src.sizes().end(), dst.sizes().begin(), dst.sizes().end())) {
      const R::Error r = R::resize_tensor(dst, src.sizes());
      if (r != R::Error::Ok) return r;
    }
    if (dst.numel() != src.numel()) return R::Error::InvalidArgument;
    convert_elements(slot->program, static_cast<const std::uint8_t*>(src.const_data_ptr()), slot->call,
                     static_cast<std::uint8_t*>(dst.mutable_data_ptr()), static_cast<std::size_t>(src.numel()));
    return R::Error::Ok;
  }
  if (src.scalar_type() != dst.scalar_type()) {
    ET_LOG(Error, "fatpte fat delegate: output %zu of the nested method has another dtype than the call's", j);
    return R::Error::InvalidArgument;
  }
  if (!std::equal(src.sizes().begin(), src.sizes().end(), dst.sizes().begin(), dst.sizes().end())) {
    const R::Error r = R::resize_tensor(dst, src.sizes());
    if (r != R::Error::Ok) return r;
  }
  if (dst.nbytes() != src.nbytes()) return R::Error::InvalidArgument;
  if (src.nbytes() != 0) std::memcpy(dst.mutable_data_ptr(), src.const_data_ptr(), src.nbytes());
  return R::Error::Ok;
}

// The elements of `in` laid out with `strides` (in elements) as `to` into `out`: copied, or
// converted at the edge (a signature adapter) straight into place when the layout is row-major.
void stage_elements(const Tensor& in, DType to, const std::vector<std::int64_t>& strides, std::vector<std::uint8_t>& out) {
  const std::vector<std::int64_t> row_major = contiguous_strides(in.shape);
  const std::size_t count = in.data.size() / element_size(in.dtype);
  out.resize(count * element_size(to));
  if (to == in.dtype) {
    strided_copy(in.data.data(), row_major, out.data(), strides, in.shape, element_size(to));
  } else if (strides == row_major) {
    convert_elements(in.dtype, in.data.data(), to, out.data(), count);
  } else {
    std::vector<std::uint8_t> flat(out.size());
    convert_elements(in.dtype, in.data.data(), to, flat.data(), count);
    strided_copy(flat.data(), row_major, out.data(), strides, in.shape, element_size(to));
  }
}

}  // namespace

ProgramMethod::ProgramMethod(Bytes program, Buffer copy, const MethodLimits& limits)
    : copy_(std::move(copy)),
      bytes_(copy_ ? Bytes{copy_.get(), program.size} : program),
      loader_(bytes_.data, static_cast<size_t>(bytes_.size)),
      method_allocator_(limits.method_allocator),
      temp_allocator_(limits.temp_allocator),
      planned_limit_(limits.planned),
      planned_origin_(limits.planned_origin) {}

R::Error ProgramMethod::load_program() {
  R::Result<R::Program> program = load_verified(&loader_, bytes_.data);
  if (!program.ok()) return program.error();
  program_.emplace(std::move(program.get()));
  return R::Error::Ok;
}

std::string ProgramMethod::reserve(const std::string& name, const R::MethodMeta& meta, std::uint64_t& total) {
  name_ = name;
  const std::string why = plan_memory(meta, name_, planned_limit_, planned_origin_, planned_, spans_, total);
  if (!why.empty()) return why;
  planned_allocator_ = std::make_unique<R::HierarchicalAllocator>(R::Span<R::Span<uint8_t>>(spans_.data(), spans_.size()));
  memory_ = std::make_unique<R::MemoryManager>(&method_allocator_, planned_allocator_.get(), &temp_allocator_);
  return "";
}

R::Error ProgramMethod::load_method(const R::NamedDataMap* named_data) {
  R::Result<R::Method> m = program_->load_method(name_.c_str(), memory_.get(), nullptr, named_data);
  if (!m.ok()) return m.error();
  method_.emplace(std::move(m.get()));
  return R::Error::Ok;
}

Status ProgramMethod::set_inputs(const std::vector<Tensor>& inputs) {
  const size_t n = method_->inputs_size();
  if (inputs.size() != n) {
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "inputs", "method '%s' takes %zu inputs; %zu were given",
                name_.c_str(), n, inputs.size());
  }
  const R::MethodMeta meta = method_->method_meta();
  staged_.clear();
  staged_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const EdgeSlot* slot = in_slot(i);
    if (slot == nullptr) {
      FATPTE_RETURN_IF_ERROR(set_input(meta, i, inputs[i], staged_[i]));
      continue;
    }
    if (inputs[i].none || inputs[i].dtype != slot->call) {
      const char* given = inputs[i].none ? "None" : dtype_name(inputs[i].dtype);
      return input_error(i, std::string("of the container's signature is ") + dtype_name(slot->call) + " (the program's " +
                                dtype_name(slot->program) + ", converted at the edge); the call gives " +
                                (given ? given : "?"));
    }
    FATPTE_RETURN_IF_ERROR(set_input(meta, i, inputs[i], staged_[i], slot->program));
  }
  return Status();
}

std::string ProgramMethod::adapt(EdgeAdapter adapter) {
  const R::MethodMeta meta = method_->method_meta();
  const std::vector<std::optional<EdgeSlot>>* parts[2] = {&adapter.inputs, &adapter.outputs};
  for (int k = 0; k < 2; ++k) {
    const char* part = k == 0 ? "input" : "output";
    for (std::size_t i = 0; i < parts[k]->size(); ++i) {
      const std::optional<EdgeSlot>& slot = (*parts[k])[i];
      if (!slot) continue;
      R::Result<R::Tag> tag = k == 0 ? meta.input_tag(i) : meta.output_tag(i);
      R::Result<R::TensorInfo> info = k == 0 ? meta.input_tensor_meta(i) : meta.output_tensor_meta(i);
      const int have = tag.ok() && tag.get() == R::Tag::Tensor && info.ok() ? static_cast<int>(info->scalar_type()) : -1;
      if (have != static_cast<int>(slot->program)) {
        const char* name = have >= 0 ? code_name(have) : nullptr;
        return std::string("the manifest declares ") + part + " " + std::to_string(i) + " of method '" + name_ +
               "' as " + dtype_name(slot->program) + " in the program (" + dtype_name(slot->call) +
               " at the edge: program_dtype); the program's is " +
               (have < 0 ? std::string("no tensor there") : name ? name : "another dtype");
      }
    }
  }
  edge_ = std::move(adapter);
  return "";
}

const EdgeSlot* ProgramMethod::in_slot(std::size_t i) const noexcept {
  return i < edge_.inputs.size() && edge_.inputs[i] ? &*edge_.inputs[i] : nullptr;
}

const EdgeSlot* ProgramMethod::out_slot(std::size_t j) const noexcept {
  return j < edge_.outputs.size() && edge_.outputs[j] ? &*edge_.outputs[j] : nullptr;
}

Status ProgramMethod::set_input(const R::MethodMeta& meta, size_t i, const Tensor& in, StagedInput& staged,
                                std::optional<DType> program) {
  R::Result<R::Tag> tag = meta.input_tag(i);
  if (!tag.ok()) return input_error(i, "cannot be described by ExecuTorch (MethodMeta)");
  if (is_scalar(tag.get())) {
    Result<R::EValue> v = scalar_value(i, tag.get(), in);
    if (!v.ok()) return v.error();
    return set(i, v.value());
  }
  if (tag.get() != R::Tag::Tensor) {
    return input_error(i, std::string("is a ") + tag_name(tag.get()) + " value, which a call cannot give");
  }
  R::Result<R::TensorInfo> info = meta.input_tensor_meta(i);
  if (!info.ok()) return input_error(i, "cannot be described by ExecuTorch (MethodMeta)");
  const size_t rank = in.shape.size();
  const DType to = program.value_or(in.dtype);
  FATPTE_RETURN_IF_ERROR(tensor_fits(info.get(), i, static_cast<int>(to), in.shape.data(), rank));
  const std::size_t element = element_size(in.dtype);
  const std::uint64_t numel = in.numel();
  if (numel == kNoCount || element == 0 || in.data.size() / element != numel || in.data.size() % element != 0) {
    return input_error(i, "holds " + std::to_string(in.data.size()) + " bytes, which its dtype and shape do not");
  }
  std::vector<std::uint8_t> order(info->dim_order().begin(), info->dim_order().end());
  if (order.size() != rank || !is_permutation(order)) {
    order.resize(rank);
    for (size_t d = 0; d < rank; ++d) order[d] = static_cast<std::uint8_t>(d);
  }
  const std::vector<std::int64_t> strides = dim_order_strides(in.shape, order);
  stage_elements(in, to, strides, staged.data);
  for (size_t d = 0; d < rank; ++d) {
    staged.sizes.push_back(static_cast<TensorImpl::SizesType>(in.shape[d]));
    staged.dim_order.push_back(order[d]);
    staged.strides.push_back(static_cast<TensorImpl::StridesType>(strides[d]));
  }
  staged.impl = std::make_unique<TensorImpl>(info->scalar_type(), static_cast<ssize_t>(rank), staged.sizes.data(),
                                             staged.data.data(), staged.dim_order.data(), staged.strides.data(),
                                             R::TensorShapeDynamism::STATIC);
  return set(i, R::EValue(executorch::aten::Tensor(staged.impl.get())));
}

Status ProgramMethod::set(size_t i, const R::EValue& v) {
  Capture capture;
  const R::Error e = method_->set_input(v, i);
  if (e == R::Error::Ok) return Status();
  return fail(Error::INVALID_ARGUMENT, kNoOffset, "inputs[" + std::to_string(i) + "]", "input %zu: %s", i,
              et_reason("ExecuTorch refused it (set_input)", e, capture).c_str());
}

Status ProgramMethod::execute() {
  Capture capture;
  const R::Error e = method_->execute();
  if (e == R::Error::Ok) return Status();
  return fail(Error::INVALID_ARGUMENT, kNoOffset, "", "%s",
              et_reason(("ExecuTorch could not execute method '" + name_ + "'").c_str(), e, capture).c_str());
}

Result<Tensor> ProgramMethod::output(size_t i) const {
  const R::EValue& v = method_->get_output(i);
  Tensor t;
  if (v.isNone()) {
    t.none = true;
    return t;
  }
  if (v.isInt() || v.isDouble() || v.isBool()) {
    t.dtype = v.isInt() ? DType::kInt64 : v.isDouble() ? DType::kFloat64 : DType::kBool;
    t.data.resize(element_size(t.dtype));
    if (v.isInt()) {
      const std::int64_t x = v.toInt();
      std::memcpy(t.data.data(), &x, 8);
    } else if (v.isDouble()) {
      const double x = v.toDouble();
      std::memcpy(t.data.data(), &x, 8);
    } else {
      t.data[0] = v.toBool() ? 1 : 0;
    }
    return t;
  }
  if (!v.isTensor()) {
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "outputs[" + std::to_string(i) + "]",
                "output %zu of method '%s' is a %s value, which fatpte cannot return", i, name_.c_str(), tag_name(v.tag));
  }
  const executorch::aten::Tensor& et = v.toTensor();
  const int code = static_cast<int>(et.scalar_type());
  if (!is_dtype(code)) {
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "outputs[" + std::to_string(i) + "]",
                "output %zu of method '%s' has ScalarType %d, which fatpte cannot represent", i, name_.c_str(), code);
  }
  t.dtype = static_cast<DType>(code);
  std::vector<std::int64_t> strides;
  for (auto s : et.sizes()) t.shape.push_back(s);
  for (auto s : et.strides()) strides.push_back(s);
  if (strides.size() != t.shape.size()) strides = contiguous_strides(t.shape);
  const EdgeSlot* slot = out_slot(i);
  const bool adapted = slot != nullptr && t.dtype == slot->program;
  const auto* src = static_cast<const std::uint8_t*>(et.const_data_ptr());
  if (adapted && strides == contiguous_strides(t.shape)) {  // converted at the edge straight into place
    const std::size_t count = static_cast<std::size_t>(t.numel());
    t.dtype = slot->call;
    t.data.resize(count * element_size(t.dtype));
    if (count != 0) convert_elements(slot->program, src, slot->call, t.data.data(), count);
    return t;
  }
  t.data.resize(static_cast<std::size_t>(t.numel()) * element_size(t.dtype));
  if (!t.data.empty()) {
    strided_copy(src, strides, t.data.data(), contiguous_strides(t.shape), t.shape, element_size(t.dtype));
  }
  if (adapted) return converted(t, slot->call);
  return t;
}

Result<std::vector<Tensor>> ProgramMethod::run(const std::vector<Tensor>& inputs) {
  FATPTE_RETURN_IF_ERROR(set_inputs(inputs));
  FATPTE_RETURN_IF_ERROR(execute());
  std::vector<Tensor> out;
  for (size_t i = 0; i < method_->outputs_size(); ++i) {
    auto t = output(i);
    if (!t.ok()) return t.error();
    out.push_back(std::move(t).value());
  }
  return out;
}

std::string ProgramMethod::golden(const GoldenCallSpec& call) {
  const std::size_t inputs = method_->inputs_size();
  if (call.inputs.size() != inputs || call.outputs.size() != method_->outputs_size()) {
    return "the golden call has " + std::to_string(call.inputs.size()) + " inputs and " +
           std::to_string(call.outputs.size()) + " outputs, the method " + std::to_string(inputs) + " and " +
           std::to_string(method_->outputs_size());
  }
  std::vector<Tensor> in;
  in.reserve(inputs);
  for (const GoldenTensor& t : call.inputs) in.push_back(golden_input(t));
  const Status set = set_inputs(in);
  if (!set.ok()) return set.message();
  const R::Error e = method_->execute();
  if (e != R::Error::Ok) return "the method could not execute (error " + std::to_string(static_cast<int>(e)) + ")";
  for (std::size_t j = 0; j < call.outputs.size(); ++j) {
    std::string why;
    if (out_slot(j) != nullptr) {
      Result<Tensor> got = output(j);
      why = got.ok() ? golden_tensor(j, got.value(), call.outputs[j]) : got.error().message();
    } else {
      why = golden_output(j, method_->get_output(j), call.outputs[j]);
    }
    if (!why.empty()) return why;
  }
  return "";
}

R::Error ProgramMethod::set_value(std::size_t i, const R::EValue& value) {
  const EdgeSlot* slot = in_slot(i);
  if (slot == nullptr || !value.isTensor()) return set_checked(i, value);
  if (staged_.size() < method_->inputs_size()) staged_.resize(method_->inputs_size());
  return stage_adapted(i, *slot, value, staged_[i]);
}

R::Error ProgramMethod::stage_adapted(std::size_t i, const EdgeSlot& slot, const R::EValue& value, StagedInput& staged) {
  const executorch::aten::Tensor& t = value.toTensor();
  if (dtype_of(t) != slot.call) {
    const char* given = code_name(static_cast<int>(t.scalar_type()));
    ET_LOG(Error, "fatpte: method '%s': input %zu of the container's signature is %s (the program's %s, converted at the "
           "edge); the call gives %s", name_.c_str(), i, dtype_name(slot.call), dtype_name(slot.program),
           given ? given : "?");
    return R::Error::InvalidArgument;
  }
  const std::size_t numel = static_cast<std::size_t>(t.numel());
  staged.data.resize(numel * element_size(slot.program));
  if (numel != 0) {
    convert_elements(slot.call, static_cast<const std::uint8_t*>(t.const_data_ptr()), slot.program, staged.data.data(),
                     numel);
  }
  staged.sizes.assign(t.sizes().begin(), t.sizes().end());
  staged.dim_order.assign(t.dim_order().begin(), t.dim_order().end());
  staged.strides.assign(t.strides().begin(), t.strides().end());
  staged.impl = std::make_unique<TensorImpl>(static_cast<executorch::aten::ScalarType>(slot.program),
                                             static_cast<ssize_t>(t.dim()), staged.sizes.data(), staged.data.data(),
                                             staged.dim_order.data(), staged.strides.data(),
                                             R::TensorShapeDynamism::STATIC);
  return set_checked(i, R::EValue(executorch::aten::Tensor(staged.impl.get())));
}

R::Error ProgramMethod::set_checked(std::size_t i, const R::EValue& value) {
  const R::MethodMeta meta = method_->method_meta();
  R::Result<R::Tag> tag = meta.input_tag(i);
  if (tag.ok() && tag.get() == R::Tag::Tensor && value.isTensor()) {
    R::Result<R::TensorInfo> info = meta.input_tensor_meta(i);
    const executorch::aten::Tensor& t = value.toTensor();
    const Status fits = info.ok() ? tensor_fits(info.get(), i, static_cast<int>(t.scalar_type()), t.sizes().data(),
                                                t.sizes().size())
                                  : input_error(i, "cannot be described by ExecuTorch (MethodMeta)");
    if (!fits.ok()) {
      ET_LOG(Error, "fatpte: method '%s': %s", name_.c_str(), fits.describe().c_str());
      return R::Error::InvalidArgument;
    }
  }
  return method_->set_input(value, i);
}

R::Result<std::vector<R::EValue>> ProgramMethod::execute_values(const std::vector<R::EValue>& inputs) {
  const R::Error set = set_values(inputs);
  if (set != R::Error::Ok) return set;
  return execute_set();
}

R::Error ProgramMethod::set_values(const std::vector<R::EValue>& inputs) {
  if (inputs.size() != method_->inputs_size()) return R::Error::InvalidArgument;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].isNone()) continue;
    const R::Error set = set_value(i, inputs[i]);
    if (set != R::Error::Ok) return set;
  }
  return R::Error::Ok;
}

R::Result<std::vector<R::EValue>> ProgramMethod::execute_set() {
  const R::Error ran = method_->execute();
  if (ran != R::Error::Ok) return ran;
  std::vector<R::EValue> outputs(method_->outputs_size());
  const R::Error got = method_->get_outputs(outputs.data(), outputs.size());
  if (got != R::Error::Ok) return got;
  if (edge_.empty()) return outputs;
  edge_outputs_.resize(outputs.size());
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    const EdgeSlot* slot = out_slot(j);
    if (slot == nullptr || !outputs[j].isTensor() || dtype_of(outputs[j].toTensor()) != slot->program) continue;
    // The method's own output is converted into a tensor of the signature's dtype the method type
    // owns until the next call, with the output's sizes and dim order.
    const executorch::aten::Tensor& src = outputs[j].toTensor();
    StagedInput& out = edge_outputs_[j];
    out.data.resize(static_cast<std::size_t>(src.numel()) * element_size(slot->call));
    if (src.numel() != 0) {
      convert_elements(slot->program, static_cast<const std::uint8_t*>(src.const_data_ptr()), slot->call,
                       out.data.data(), static_cast<std::size_t>(src.numel()));
    }
    out.sizes.assign(src.sizes().begin(), src.sizes().end());
    out.dim_order.assign(src.dim_order().begin(), src.dim_order().end());
    out.strides.assign(src.strides().begin(), src.strides().end());
    out.impl = std::make_unique<TensorImpl>(static_cast<executorch::aten::ScalarType>(slot->call),
                                            static_cast<ssize_t>(src.dim()), out.sizes.data(), out.data.data(),
                                            out.dim_order.data(), out.strides.data(), R::TensorShapeDynamism::STATIC);
    outputs[j] = R::EValue(executorch::aten::Tensor(out.impl.get()));
  }
  return outputs;
}

R::Error ProgramMethod::forward(R::Span<R::EValue*> args) {
  const std::size_t inputs = method_->inputs_size();
  const std::size_t outputs = method_->outputs_size();
  if (args.size() != inputs + outputs) {
    ET_LOG(Error, "fatpte fat delegate: the call passes %zu values; the nested method '%s' takes %zu inputs and %zu outputs",
           args.size(), name_.c_str(), inputs, outputs);
    return R::Error::InvalidArgument;
  }
  for (std::size_t i = 0; i < inputs; ++i) {
    const R::Error e = set_value(i, *args[i]);
    if (e != R::Error::Ok) return e;
  }
  const R::Error e = method_->execute();
  if (e != R::Error::Ok) return e;
  for (std::size_t j = 0; j < outputs; ++j) {
    const R::Error r = copy_output(j, method_->get_output(j), *args[inputs + j], out_slot(j));
    if (r != R::Error::Ok) return r;
  }
  return R::Error::Ok;
}

}  // namespace et
}  // namespace fatpte
