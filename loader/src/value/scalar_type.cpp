// ExecuTorch's ScalarType numbers, their element sizes and elements (value/scalar_type.hpp).
#include "value/scalar_type.hpp"

#include <cstring>

#include "fatpte/tensor.hpp"

namespace fatpte {
namespace {

template <typename T>
double load(const std::uint8_t* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<double>(v);
}

double load_half(const std::uint8_t* p, bool brain) noexcept {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return brain ? bfloat16_to_float(h) : half_to_float(h);  // both exact as a double
}

}  // namespace

std::uint64_t program_element_size(std::int8_t code) noexcept {
  switch (static_cast<ScalarType>(code)) {
    case ScalarType::kByte: case ScalarType::kChar: case ScalarType::kBool: case ScalarType::kQInt8:
    case ScalarType::kQUInt8: case ScalarType::kQUInt4x2: case ScalarType::kQUInt2x4:
    case ScalarType::kFloat8_e5m2: case ScalarType::kFloat8_e4m3fn: case ScalarType::kFloat8_e5m2fnuz:
    case ScalarType::kFloat8_e4m3fnuz:
      return 1;
    case ScalarType::kShort: case ScalarType::kHalf: case ScalarType::kBFloat16: case ScalarType::kBits16:
    case ScalarType::kUInt16:
      return 2;
    case ScalarType::kInt: case ScalarType::kFloat: case ScalarType::kQInt32: case ScalarType::kUInt32:
      return 4;
    case ScalarType::kLong: case ScalarType::kDouble: case ScalarType::kUInt64:
      return 8;
    default:
      return 0;
  }
}

const char* program_dtype_name(std::int8_t code) noexcept {
  switch (static_cast<ScalarType>(code)) {
    case ScalarType::kByte: return "uint8";
    case ScalarType::kChar: return "int8";
    case ScalarType::kShort: return "int16";
    case ScalarType::kInt: return "int32";
    case ScalarType::kLong: return "int64";
    case ScalarType::kHalf: return "float16";
    case ScalarType::kFloat: return "float32";
    case ScalarType::kDouble: return "float64";
    case ScalarType::kBool: return "bool";
    case ScalarType::kQInt8: return "qint8";
    case ScalarType::kQUInt8: return "quint8";
    case ScalarType::kQInt32: return "qint32";
    case ScalarType::kBFloat16: return "bfloat16";
    case ScalarType::kQUInt4x2: return "quint4x2";
    case ScalarType::kQUInt2x4: return "quint2x4";
    case ScalarType::kBits16: return "bits16";
    case ScalarType::kFloat8_e5m2: return "float8_e5m2";
    case ScalarType::kFloat8_e4m3fn: return "float8_e4m3fn";
    case ScalarType::kFloat8_e5m2fnuz: return "float8_e5m2fnuz";
    case ScalarType::kFloat8_e4m3fnuz: return "float8_e4m3fnuz";
    case ScalarType::kUInt16: return "uint16";
    case ScalarType::kUInt32: return "uint32";
    case ScalarType::kUInt64: return "uint64";
    default: return "";
  }
}

const char* native_dtype_name(std::int8_t code) noexcept {
  if (code >= 0 && code <= 7) return program_dtype_name(code);
  switch (code) {
    case 11: return "bool";
    case 15: return "bfloat16";
    case 16: return "uint16";
    case 17: return "uint32";
    case 18: return "uint64";
    default: return "";
  }
}

bool element_as_double(std::int8_t code, const std::uint8_t* p, double* out) noexcept {
  switch (static_cast<ScalarType>(code)) {
    case ScalarType::kByte: case ScalarType::kQUInt8: *out = load<std::uint8_t>(p); return true;
    case ScalarType::kChar: case ScalarType::kQInt8: *out = load<std::int8_t>(p); return true;
    case ScalarType::kShort: *out = load<std::int16_t>(p); return true;
    case ScalarType::kInt: case ScalarType::kQInt32: *out = load<std::int32_t>(p); return true;
    case ScalarType::kLong: *out = load<std::int64_t>(p); return true;
    case ScalarType::kHalf: *out = load_half(p, false); return true;
    case ScalarType::kFloat: *out = load<float>(p); return true;
    case ScalarType::kDouble: *out = load<double>(p); return true;
    case ScalarType::kBool: *out = p[0] != 0 ? 1.0 : 0.0; return true;
    case ScalarType::kBFloat16: *out = load_half(p, true); return true;
    case ScalarType::kUInt16: *out = load<std::uint16_t>(p); return true;
    case ScalarType::kUInt32: *out = load<std::uint32_t>(p); return true;
    case ScalarType::kUInt64: *out = load<std::uint64_t>(p); return true;
    default: return false;
  }
}

}  // namespace fatpte
