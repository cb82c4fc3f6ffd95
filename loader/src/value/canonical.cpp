// The canonical-bytes writer (value/canonical.hpp).
#include "value/canonical.hpp"

#include <cstring>

namespace fatpte {
namespace detail {

void CanonicalWriter::f64(double v) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  u64(bits);
}

void CanonicalWriter::bytes(const std::uint8_t* data, std::size_t size) {
  u32(static_cast<std::uint32_t>(size));
  out_.insert(out_.end(), data, data + size);
}

}  // namespace detail
}  // namespace fatpte
