// Signature adapters (value/adapter.hpp).
#include "value/adapter.hpp"

#include <cstring>
#include <string>

namespace fatpte {
namespace {

bool is_half(DType d) noexcept { return d == DType::kFloat16 || d == DType::kBFloat16; }

float load_float(DType from, const std::uint8_t* p) noexcept {
  if (from == DType::kFloat32) {
    float f;
    std::memcpy(&f, p, sizeof f);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return from == DType::kFloat16 ? half_to_float(h) : bfloat16_to_float(h);
}

void store_float(DType to, float f, std::uint8_t* p) noexcept {
  if (to == DType::kFloat32) {
    std::memcpy(p, &f, sizeof f);
    return;
  }
  const std::uint16_t h = to == DType::kFloat16 ? float_to_half(f) : float_to_bfloat16(f);
  std::memcpy(p, &h, sizeof h);
}

}  // namespace

std::string adapter_problem(const std::string& dtype, const std::string& program_dtype) {
  if (dtype == "float32" && (program_dtype == "float16" || program_dtype == "bfloat16")) return "";
  return "program_dtype '" + program_dtype + "' cannot stand behind dtype '" + dtype +
         "'; an adapter converts only float16 behind float32, bfloat16 behind float32";
}

bool adapts(DType a, DType b) noexcept {
  return (a == DType::kFloat32 && is_half(b)) || (b == DType::kFloat32 && is_half(a));
}

void convert_elements(DType from, const std::uint8_t* src, DType to, std::uint8_t* dst, std::size_t count) noexcept {
  const std::size_t in = element_size(from), out = element_size(to);
  for (std::size_t i = 0; i < count; ++i) store_float(to, load_float(from, src + i * in), dst + i * out);
}

Tensor converted(const Tensor& t, DType to) {
  if (t.none || !adapts(t.dtype, to)) return t;
  Tensor out;
  out.dtype = to;
  out.shape = t.shape;
  const std::size_t count = t.data.size() / element_size(t.dtype);
  out.data.resize(count * element_size(to));
  convert_elements(t.dtype, t.data.data(), to, out.data.data(), count);
  return out;
}

}  // namespace fatpte
