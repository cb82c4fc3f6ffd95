// Typed tensors and their JSON form (tensor.hpp).
#include "fatpte/tensor.hpp"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/json.hpp"
#include "value/scalar_type.hpp"

namespace fatpte {
namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;
  std::size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kUInt8, "uint8", 1},       {DType::kInt8, "int8", 1},         {DType::kInt16, "int16", 2},
    {DType::kInt32, "int32", 4},       {DType::kInt64, "int64", 8},       {DType::kFloat16, "float16", 2},
    {DType::kFloat32, "float32", 4},   {DType::kFloat64, "float64", 8},   {DType::kBool, "bool", 1},
    {DType::kBFloat16, "bfloat16", 2}, {DType::kUInt16, "uint16", 2},     {DType::kUInt32, "uint32", 4},
    {DType::kUInt64, "uint64", 8},
};

const DTypeInfo* info(DType d) noexcept {
  for (const DTypeInfo& i : kDTypes) {
    if (i.dtype == d) return &i;
  }
  return nullptr;
}

template <typename T>
T load(const std::uint8_t* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
void store(std::vector<std::uint8_t>& out, std::size_t i, T v) {
  std::memcpy(out.data() + i * sizeof v, &v, sizeof v);
}

Status bad_field(const std::string& field, const std::string& what) {
  return fail(Error::INVALID_ARGUMENT, kNoOffset, field, "%s %s", field.c_str(), what.c_str());
}

// One JSON value into element i of `out`, checked against the dtype's range.
Status put_value(const json::Value& v, DType dtype, std::vector<std::uint8_t>& out, std::size_t i,
                 const std::string& field) {
  switch (dtype) {
    case DType::kBool: {
      if (v.is(json::Kind::kBool)) {
        out[i] = v.boolean() ? 1 : 0;
        return Status();
      }
      bool negative = false;
      std::uint64_t m = 0;  // 0, -0 or 1: the integers Python's reader takes as a bool
      if (json::integer(v, negative, m) && m <= (negative ? 0u : 1u)) {
        out[i] = static_cast<std::uint8_t>(m);
        return Status();
      }
      return bad_field(field, "must be true or false");
    }
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat32:
    case DType::kFloat64: {
      auto d = json::to_double(v, field);
      if (!d.ok()) return d.error();
      if (dtype == DType::kFloat64) store<double>(out, i, d.value());
      if (dtype == DType::kFloat32) store<float>(out, i, static_cast<float>(d.value()));
      if (dtype == DType::kFloat16) store<std::uint16_t>(out, i, float_to_half(static_cast<float>(d.value())));
      if (dtype == DType::kBFloat16) {
        store<std::uint16_t>(out, i, float_to_bfloat16(static_cast<float>(d.value())));
      }
      return Status();
    }
    case DType::kUInt64: {
      bool negative = false;
      std::uint64_t m = 1;
      if (json::integer(v, negative, m) && negative && m == 0) {  // -0, as Python's reader takes it
        store<std::uint64_t>(out, i, 0);
        return Status();
      }
      auto u = json::to_uint64(v, field);
      if (!u.ok()) return u.error();
      store<std::uint64_t>(out, i, u.value());
      return Status();
    }
    default:
      break;
  }
  auto n = json::to_int64(v, field);
  if (!n.ok()) return n.error();
  const std::int64_t x = n.value();
  auto in = [&](std::int64_t lo, std::int64_t hi) { return x >= lo && x <= hi; };
  const char* range = nullptr;
  switch (dtype) {
    case DType::kUInt8:
      if (!in(0, 255)) range = "0..255";
      else out[i] = static_cast<std::uint8_t>(x);
      break;
    case DType::kInt8:
      if (!in(-128, 127)) range = "-128..127";
      else store<std::int8_t>(out, i, static_cast<std::int8_t>(x));
      break;
    case DType::kInt16:
      if (!in(-32768, 32767)) range = "-32768..32767";
      else store<std::int16_t>(out, i, static_cast<std::int16_t>(x));
      break;
    case DType::kUInt16:
      if (!in(0, 65535)) range = "0..65535";
      else store<std::uint16_t>(out, i, static_cast<std::uint16_t>(x));
      break;
    case DType::kInt32:
      if (!in(INT32_MIN, INT32_MAX)) range = "the int32 range";
      else store<std::int32_t>(out, i, static_cast<std::int32_t>(x));
      break;
    case DType::kUInt32:
      if (!in(0, UINT32_MAX)) range = "the uint32 range";
      else store<std::uint32_t>(out, i, static_cast<std::uint32_t>(x));
      break;
    default:  // kInt64
      store<std::int64_t>(out, i, x);
      break;
  }
  if (range != nullptr) return bad_field(field, "is " + std::string(v.text()) + ", outside " + range);
  return Status();
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t d = 0; d < shape.size(); ++d) out += (d ? ", " : "") + std::to_string(shape[d]);
  return out + "]";
}

Result<Tensor> tensor_from_json(const json::Value& v, const std::string& field) {
  if (!v.is(json::Kind::kObject)) return bad_field(field, "must be an object with dtype, shape and values");
  const json::Value dtype = v.find("dtype");
  const json::Value shape = v.find("shape");
  const json::Value values = v.find("values");
  if (!dtype.is(json::Kind::kString)) return bad_field(field + ".dtype", "must be a string");
  Tensor t;
  if (!dtype_from_name(std::string(dtype.text()), &t.dtype)) {
    std::string names;
    for (const DTypeInfo& i : kDTypes) names += std::string(names.empty() ? "" : ", ") + i.name;
    return bad_field(field + ".dtype", "is '" + std::string(dtype.text()) + "', not one of " + names);
  }
  if (!shape.is(json::Kind::kArray)) return bad_field(field + ".shape", "must be a list of sizes ([] for a scalar)");
  for (const json::Value size : shape.items()) {
    const std::string at = field + ".shape[" + std::to_string(t.shape.size()) + "]";
    // A size is an i32 of the manifest's TensorLayout (and ExecuTorch's SizesType), as Python's
    // reader takes it: a golden tensor made of these calls must fit the manifest.
    auto n = json::to_int64(size, at);
    if (!n.ok() || n.value() < 0 || n.value() > INT32_MAX) return bad_field(at, "must be a size from 0 to 2^31 - 1");
    t.shape.push_back(n.value());
  }
  if (!values.is(json::Kind::kArray)) {
    return bad_field(field + ".values", "must be a flat list of the elements in row-major order");
  }
  const std::uint64_t numel = t.numel();
  if (numel == kNoCount) {
    return fail(Error::INVALID_ARGUMENT, kNoOffset, field + ".shape",
                "%s.shape %s has more elements than 64 bits count", field.c_str(), shape_text(t.shape).c_str());
  }
  if (numel != values.size()) {
    return fail(Error::INVALID_ARGUMENT, kNoOffset, field + ".values",
                "%s.values holds %zu elements, but shape %s has %" PRIu64, field.c_str(), values.size(),
                shape_text(t.shape).c_str(), numel);
  }
  t.data.assign(static_cast<std::size_t>(numel) * element_size(t.dtype), 0);
  std::size_t i = 0;
  for (const json::Value x : values.items()) {
    FATPTE_RETURN_IF_ERROR(put_value(x, t.dtype, t.data, i, field + ".values[" + std::to_string(i) + "]"));
    ++i;
  }
  return t;
}

void append_number(std::string& out, double v, int digits) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "Infinity" : "-Infinity";
  } else {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    out += buf;
  }
}

// Element i as text: integers exactly, floats with enough digits to read the stored value back.
void append_element(std::string& out, const Tensor& t, std::size_t i) {
  const std::uint8_t* p = t.data.data() + i * element_size(t.dtype);
  char buf[32];
  switch (t.dtype) {
    case DType::kBool: out += p[0] != 0 ? "true" : "false"; return;
    case DType::kFloat64: append_number(out, load<double>(p), 17); return;
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16: append_number(out, t.as_double(i), 9); return;
    case DType::kUInt64: std::snprintf(buf, sizeof buf, "%" PRIu64, load<std::uint64_t>(p)); break;
    case DType::kInt64: std::snprintf(buf, sizeof buf, "%" PRId64, load<std::int64_t>(p)); break;
    default: std::snprintf(buf, sizeof buf, "%.0f", t.as_double(i)); break;  // exact below 2^53
  }
  out += buf;
}

}  // namespace

const char* dtype_name(DType dtype) noexcept {
  const DTypeInfo* i = info(dtype);
  return i == nullptr ? nullptr : i->name;
}

bool dtype_from_name(const std::string& name, DType* out) noexcept {
  for (const DTypeInfo& i : kDTypes) {
    if (name == i.name) {
      *out = i.dtype;
      return true;
    }
  }
  return false;
}

bool is_dtype(int code) noexcept {
  for (const DTypeInfo& i : kDTypes) {
    if (static_cast<int>(i.dtype) == code) return true;
  }
  return false;
}

std::size_t element_size(DType dtype) noexcept {
  const DTypeInfo* i = info(dtype);
  return i == nullptr ? 0 : i->size;
}

std::uint64_t Tensor::numel() const noexcept {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) return kNoCount;
    const auto u = static_cast<std::uint64_t>(d);
    if (u != 0 && n >= kNoCount / u) {
      // Past 64 bits, unless a later dimension is 0.
      for (std::int64_t rest : shape) {
        if (rest == 0) return 0;
      }
      return kNoCount;
    }
    n *= u;
  }
  return n;
}

double Tensor::as_double(std::size_t i) const noexcept {
  double out = 0.0;
  element_as_double(static_cast<std::int8_t>(dtype), data.data() + i * element_size(dtype), &out);
  return out;
}

Result<std::vector<Call>> calls_from_json(const std::string& text, const std::string& source) {
  auto doc = json::parse(text, source);
  if (!doc.ok()) return doc.error();
  const json::Value root = doc.value().root();
  if (!root.is(json::Kind::kArray)) {
    return bad_field("calls", "must be a JSON list with one {\"inputs\": [...]} object per call (" + source + ")");
  }
  std::vector<Call> calls;
  for (const json::Value call : root.items()) {
    const std::string field = "calls[" + std::to_string(calls.size()) + "]";
    const json::Value inputs = call.find("inputs");  // other keys are ignored
    if (!inputs.is(json::Kind::kArray)) return bad_field(field + ".inputs", "must be a list of tensors");
    Call out;
    for (const json::Value input : inputs.items()) {
      auto t = tensor_from_json(input, field + ".inputs[" + std::to_string(out.inputs.size()) + "]");
      if (!t.ok()) return t.error();
      out.inputs.push_back(std::move(t).value());
    }
    calls.push_back(std::move(out));
  }
  return calls;
}

Result<std::vector<Call>> calls_from_file(const std::string& path) {
  // A bound against reading a runaway file: a few million values fit comfortably below it.
  constexpr std::uint64_t kMaxCallsBytes = std::uint64_t{1} << 30;
  auto text = json::read_file(path, kMaxCallsBytes, "the calls file");
  if (!text.ok()) return text.error();
  return calls_from_json(text.value(), path);
}

std::string tensor_json(const Tensor& t) {
  if (t.none) return "null";
  std::string out = "{\"dtype\": \"";
  out += dtype_name(t.dtype) ? dtype_name(t.dtype) : "?";
  out += "\", \"shape\": " + shape_text(t.shape) + ", \"values\": [";
  const std::size_t n = element_size(t.dtype) ? t.data.size() / element_size(t.dtype) : 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i) out += ", ";
    append_element(out, t, i);
  }
  return out + "]}";
}

std::string tensor_text(const Tensor& t) {
  if (t.none) return "None";
  std::string out = dtype_name(t.dtype) ? dtype_name(t.dtype) : "?";
  out += " " + shape_text(t.shape);
  const std::size_t n = element_size(t.dtype) ? t.data.size() / element_size(t.dtype) : 0;
  for (std::size_t i = 0; i < n; ++i) {
    out += " ";
    append_element(out, t, i);
  }
  return out;
}

std::uint16_t float_to_half(float f) noexcept {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t exp = (x >> 23) & 0xFFu;
  std::uint32_t mant = x & 0x7FFFFFu;
  if (exp == 0xFF) return static_cast<std::uint16_t>(sign | 0x7C00u | (mant != 0 ? 0x200u | (mant >> 13) : 0u));
  const std::int32_t e = static_cast<std::int32_t>(exp) - 127 + 15;
  if (e >= 0x1F) return static_cast<std::uint16_t>(sign | 0x7C00u);  // too large: infinity
  if (e <= 0) {                                                         // a subnormal half, or zero
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    const std::uint32_t shift = static_cast<std::uint32_t>(14 - e);
    std::uint32_t h = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = sign | (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  const std::uint32_t rem = mant & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
  return static_cast<std::uint16_t>(h);
}

float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  const std::uint32_t bits =
      exp == 0x1F ? sign | 0x7F800000u | (mant << 13) : sign | ((exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::uint16_t float_to_bfloat16(float f) noexcept {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu) != 0) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

float bfloat16_to_float(std::uint16_t b) noexcept {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace fatpte
