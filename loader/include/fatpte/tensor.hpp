// tensor.hpp: the typed tensors a loaded program takes and returns, and their JSON form.
//
// A Tensor owns its elements, contiguous in row-major order (the order of torch's `tolist()`),
// little-endian as the host stores them. Its dtype codes are PyTorch's ScalarType numbers, which
// ExecuTorch uses too, and its dtype names are torch's without the `torch.` prefix, the names the
// manifest's TensorSpec uses (specs/nfat-manifest.md section 5).
//
// The JSON form is the `calls` list of tests/fixtures/executorch/fixtures.json: a list with one
// object per call, `{"inputs": [tensor, ...]}` (other keys, such as recorded `outputs`, are
// ignored), each tensor `{"dtype": "float32", "shape": [2, 3], "values": [...]}` with the values
// flat in row-major order. Floating values may be NaN, Infinity and -Infinity as Python's json
// writes them; bool values are true/false (0 and 1 are accepted too).
#ifndef FATPTE_TENSOR_HPP_
#define FATPTE_TENSOR_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fatpte/result.hpp"

namespace fatpte {

// The element types a Tensor can hold: PyTorch's ScalarType values.
enum class DType : std::int8_t {
  kUInt8 = 0,
  kInt8 = 1,
  kInt16 = 2,
  kInt32 = 3,
  kInt64 = 4,
  kFloat16 = 5,
  kFloat32 = 6,
  kFloat64 = 7,
  kBool = 11,
  kBFloat16 = 15,
  kUInt16 = 27,
  kUInt32 = 28,
  kUInt64 = 29,
};

// "float32", ...; nullptr for a code that is not a DType.
const char* dtype_name(DType dtype) noexcept;
// The DType of a torch dtype name; false when the name is not one of them.
bool dtype_from_name(const std::string& name, DType* out) noexcept;
// Whether `code` (a ScalarType number) is one of the DType values.
bool is_dtype(int code) noexcept;
// Bytes per element.
std::size_t element_size(DType dtype) noexcept;

// What Tensor::numel() gives for a shape whose elements cannot be counted.
inline constexpr std::uint64_t kNoCount = ~std::uint64_t{0};

struct Tensor {
  DType dtype = DType::kFloat32;
  std::vector<std::int64_t> shape;  // empty: a scalar (one element)
  std::vector<std::uint8_t> data;   // numel * element_size bytes, row-major
  // A method output that is no tensor (None); dtype, shape and data are then meaningless.
  bool none = false;

  // The product of the shape (1 for a scalar); kNoCount when a dimension is negative or the
  // product does not fit in 64 bits, so no count of elements or bytes can wrap around.
  std::uint64_t numel() const noexcept;
  // Element i as a double (exact for every type but 64-bit integers beyond 2^53).
  double as_double(std::size_t i) const noexcept;
};

// One call: the inputs, in the method's order.
struct Call {
  std::vector<Tensor> inputs;
};

// The calls of a calls.json document (`source` names it in errors); INVALID_ARGUMENT naming the
// field, e.g. `calls[1].inputs[0].values[7]`, with what is wrong.
Result<std::vector<Call>> calls_from_json(const std::string& text, const std::string& source);
Result<std::vector<Call>> calls_from_file(const std::string& path);

// `{"dtype": "float32", "shape": [2, 3], "values": [...]}` (or `null` for a none output), one
// line. float32 and float16/bfloat16 values are written with 9 significant digits (enough to read
// back the same float32), float64 with 17, integers exactly, bools as true/false, and non-finite
// values as NaN, Infinity and -Infinity, as Python's json does.
std::string tensor_json(const Tensor& t);
// `float32 [2, 3] v0 v1 ...`: the same values as text for people.
std::string tensor_text(const Tensor& t);

// IEEE binary16 and bfloat16 conversions (round to nearest even), for callers building tensors.
std::uint16_t float_to_half(float f) noexcept;
float half_to_float(std::uint16_t h) noexcept;
std::uint16_t float_to_bfloat16(float f) noexcept;
float bfloat16_to_float(std::uint16_t b) noexcept;

}  // namespace fatpte

#endif  // FATPTE_TENSOR_HPP_
