// Signature adapters (specs/nfat-manifest.md 5.3): an entry's program may take or give a tensor in
// another floating dtype than the container's signature (float16 or bfloat16 behind float32); the
// loader converts at the edge, round to nearest even. The pairs are fatpte/value/dtypes.py's
// ADAPTER_DTYPES; the checks and messages are its adapter_problem's.
#ifndef FATPTE_SRC_VALUE_ADAPTER_HPP_
#define FATPTE_SRC_VALUE_ADAPTER_HPP_

#include <cstddef>
#include <cstdint>
#include <string>

#include "fatpte/tensor.hpp"

namespace fatpte {

// Why a tensor of the signature's `dtype` cannot stand before a program's `program_dtype`; "" when
// the pair is an adapter's (value rule 2.2.12).
std::string adapter_problem(const std::string& dtype, const std::string& program_dtype);

// Whether an adapter converts between `a` and `b` (either way round).
bool adapts(DType a, DType b) noexcept;

// `count` elements of `from` at `src` written as `to` at `dst` (a pair `adapts` accepts): float32 to
// float16 or bfloat16 rounds to nearest even, a value past the narrower range becomes its infinity
// of the same sign, NaN stays NaN; the other way is exact.
void convert_elements(DType from, const std::uint8_t* src, DType to, std::uint8_t* dst, std::size_t count) noexcept;

// `t` with its elements converted to `to` (a pair `adapts` accepts; `t` unchanged otherwise).
Tensor converted(const Tensor& t, DType to);

}  // namespace fatpte

#endif  // FATPTE_SRC_VALUE_ADAPTER_HPP_
