// Identities for the verdict store's keys (see identity.hpp). A library is identified by its GNU
// build id, which the linker computes over its content, plus its size: reading a 10 MiB library
// whole to hash it costs about 35 ms with libfatpte's own SHA-256, a start's whole budget, while
// the note is a few hundred bytes near the start of the file. A library patched in place without
// relinking keeps its build id: its size usually changes; `fatpte verdicts clear` forgets the rest.
#include "memory/identity.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/sha256.hpp"

namespace fatpte {
namespace memory {

namespace {

std::string hex(const std::uint8_t* data, std::size_t size) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (std::size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 15];
  }
  return out;
}

bool read_at(int fd, std::uint64_t offset, std::size_t size, std::vector<std::uint8_t>& out) {
  out.resize(size);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, out.data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::uint64_t le(const std::uint8_t* p, int bytes) {
  std::uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  std::memcpy(&v, p, static_cast<std::size_t>(bytes));  // the host's order is the file's
#else
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
#endif
  return v;
}

// The GNU build id in the notes at `notes`, or "".
std::string build_id_in(const std::uint8_t* notes, std::uint64_t size) {
  std::uint64_t at = 0;
  while (size >= 12 && at <= size - 12) {
    const std::uint64_t namesz = le(notes + at, 4), descsz = le(notes + at + 4, 4), type = le(notes + at + 8, 4);
    const std::uint64_t name_at = at + 12, desc_at = name_at + ((namesz + 3) & ~std::uint64_t{3});
    if (desc_at > size || descsz > size - desc_at) return "";
    if (type == 3 && namesz == 4 && std::memcmp(notes + name_at, "GNU", 4) == 0 && descsz > 0) {
      return hex(notes + desc_at, descsz);
    }
    at = desc_at + ((descsz + 3) & ~std::uint64_t{3});
  }
  return "";
}

// The first bytes of a file, read once: an ELF header, its program headers and its notes lie in
// the first page of a library as linkers lay them out, so one read serves all three; a range past
// it is read on its own.
struct FileHead {
  int fd = -1;
  std::uint64_t file_size = 0;
  std::size_t size = 0;
  std::uint8_t bytes[4096];  // left uninitialised: only the `size` bytes read are looked at

  bool read_head() {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(sizeof bytes, file_size));
    while (size < want) {
      const ssize_t n = ::pread(fd, bytes + size, want - size, static_cast<off_t>(size));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      size += static_cast<std::size_t>(n);
    }
    return true;
  }
  // `length` bytes at `offset` (checked against the file's size by the caller), from the head or
  // read into `spill`; null when the read fails.
  const std::uint8_t* at(std::uint64_t offset, std::uint64_t length, std::vector<std::uint8_t>& spill) {
    if (offset <= size && length <= size - offset) return bytes + offset;
    return read_at(fd, offset, static_cast<std::size_t>(length), spill) ? spill.data() : nullptr;
  }
};

// The GNU build id of the little-endian ELF file `fd`, from its PT_NOTE segments; "" when none.
std::string elf_build_id(int fd, std::uint64_t file_size) {
  FileHead f;  // not value-initialised: zeroing its page cost more than reading it
  f.fd = fd;
  f.file_size = file_size;
  if (file_size < 64 || !f.read_head()) return "";
  const std::uint8_t* h = f.bytes;
  if (std::memcmp(h, "\x7f" "ELF", 4) != 0 || h[5] != 1) return "";
  const bool wide = h[4] == 2;
  const std::uint64_t phoff = wide ? le(h + 32, 8) : le(h + 28, 4);
  const std::uint64_t phentsize = le(h + (wide ? 54 : 42), 2), phnum = le(h + (wide ? 56 : 44), 2);
  if (phentsize < (wide ? 56u : 32u) || phnum > 256 || phoff > file_size || phnum * phentsize > file_size - phoff) {
    return "";
  }
  std::vector<std::uint8_t> ph_spill, notes_spill;
  const std::uint8_t* ph = f.at(phoff, phnum * phentsize, ph_spill);
  if (ph == nullptr) return "";
  for (std::uint64_t i = 0; i < phnum; ++i) {
    const std::uint8_t* p = ph + i * phentsize;
    if (le(p, 4) != 4) continue;  // PT_NOTE
    const std::uint64_t offset = wide ? le(p + 8, 8) : le(p + 4, 4), size = wide ? le(p + 32, 8) : le(p + 16, 4);
    if (size > 65536 || offset > file_size || size > file_size - offset) continue;
    const std::uint8_t* notes = f.at(offset, size, notes_spill);
    if (notes == nullptr) continue;
    const std::string id = build_id_in(notes, size);
    if (!id.empty()) return id;
  }
  return "";
}

}  // namespace

std::string digest_hex(const std::string& text) {
  return detail::to_hex(detail::sha256(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

std::string digest_hex(const std::string& first, const std::string& second) {
  detail::Sha256 s;
  s.update(first.data(), first.size());
  s.update(second.data(), second.size());
  return detail::to_hex(s.finish());
}

std::string container_digest(const Container& c) { return c.table_digest(); }

std::string library_identity(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat sb;
  if (fd < 0 || ::fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    const std::string why = fd < 0 ? std::strerror(errno) : "not a regular file";
    if (fd >= 0) ::close(fd);
    return "unreadable:" + why;
  }
  const std::uint64_t size = static_cast<std::uint64_t>(sb.st_size);
  std::string id = elf_build_id(fd, size);
  if (!id.empty()) {
    ::close(fd);
    return "build-id:" + id + ":" + std::to_string(size);
  }
  std::vector<std::uint8_t> all;
  const bool read = size <= (std::uint64_t{1} << 32) && read_at(fd, 0, size, all);
  ::close(fd);
  if (!read) return "unreadable:" + std::to_string(size) + " bytes";
  return "sha256:" + detail::to_hex(detail::sha256(all.data(), all.size()));
}

}  // namespace memory
}  // namespace fatpte
