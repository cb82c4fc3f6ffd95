// ExecuTorch's ScalarType numbers (runtime/core/portable_type/scalar_type.h), named once: what a
// program's tensors, a method's inputs and outputs and a manifest layout's dtype carry. The
// DType of fatpte/tensor.hpp is the subset a call can give and a method can return; this is every
// number fatpte reads, with the bytes of one element and, where it has plain numbers, each element
// as a double. No file outside this floor and the method type spells these numbers.
#ifndef FATPTE_SRC_VALUE_SCALAR_TYPE_HPP_
#define FATPTE_SRC_VALUE_SCALAR_TYPE_HPP_

#include <cstdint>

namespace fatpte {

enum class ScalarType : std::int8_t {
  kByte = 0,
  kChar = 1,
  kShort = 2,
  kInt = 3,
  kLong = 4,
  kHalf = 5,
  kFloat = 6,
  kDouble = 7,
  kComplexHalf = 8,
  kComplexFloat = 9,
  kComplexDouble = 10,
  kBool = 11,
  kQInt8 = 12,
  kQUInt8 = 13,
  kQInt32 = 14,
  kBFloat16 = 15,
  kQUInt4x2 = 16,
  kQUInt2x4 = 17,
  kBits1x8 = 18,
  kBits2x4 = 19,
  kBits4x2 = 20,
  kBits8 = 21,
  kBits16 = 22,
  kFloat8_e5m2 = 23,
  kFloat8_e4m3fn = 24,
  kFloat8_e5m2fnuz = 25,
  kFloat8_e4m3fnuz = 26,
  kUInt16 = 27,
  kUInt32 = 28,
  kUInt64 = 29,
};

// The bytes of one element of ScalarType `code` as a program's tensor holds it
// (fatpte/value/dtypes.py PROGRAM_ELEMENT_SIZES, ExecuTorch's elementSize); 0 for a code
// fatpte does not read.
std::uint64_t program_element_size(std::int8_t code) noexcept;

// The name fatpte gives ScalarType `code` (fatpte/value/dtypes.py PROGRAM_SCALAR_TYPES: "float32",
// "quint4x2"), "" for a code it does not read (program_element_size 0).
const char* program_dtype_name(std::int8_t code) noexcept;

// The name of the native backend's ScalarType `code` (its NPTG graphs' dtype: 0 to 7 as above,
// 11 bool, 15 bfloat16, 16 to 18 uint16 to uint64; fatpte/value/dtypes.py NATIVE_SCALAR_TYPES),
// "" for another code.
const char* native_dtype_name(std::int8_t code) noexcept;

// The element of ScalarType `code` at `p` as a double (quantized types as their stored integers);
// false for a type without plain numbers. Little-endian hosts only, as every tensor of the loader.
bool element_as_double(std::int8_t code, const std::uint8_t* p, double* out) noexcept;

}  // namespace fatpte

#endif  // FATPTE_SRC_VALUE_SCALAR_TYPE_HPP_
