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

void append_hex(std::string& out, const std::uint8_t* data, std::size_t size) {
  static const char kDigits[] = "0123456789abcdef";
  const std::size_t at = out.size();
  out.resize(at + 2 * size);  // written in place: a push_back a digit was a call each
  for (std::size_t i = 0; i < size; ++i) {
    out[at + 2 * i] = kDigits[data[i] >> 4];
    out[at + 2 * i + 1] = kDigits[data[i] & 15];
  }
}

// A decimal number appended without a string of its own.
void append_decimal(std::string& out, std::uint64_t value) {
  char digits[20];
  std::size_t n = 0;
  do {
    digits[sizeof digits - ++n] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  out.append(digits + sizeof digits - n, n);
}

// `size` bytes at `offset` of `fd` into `into`; false when the file ends first or a read fails.
bool read_exact(int fd, std::uint64_t offset, std::size_t size, std::uint8_t* into) {
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd, into + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool read_at(int fd, std::uint64_t offset, std::size_t size, std::vector<std::uint8_t>& out) {
  out.resize(size);
  return read_exact(fd, offset, size, out.data());
}

// A little-endian field of `bytes` (2, 4 or 8) bytes: inlined, each a load on a little-endian
// host (a call a field, with a memcpy of variable size, was 15 instructions each).
__attribute__((always_inline)) inline std::uint64_t le(const std::uint8_t* p, int bytes) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (bytes == 2) {
    std::uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  if (bytes == 4) {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
#else
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
#endif
}

// The GNU build id in the notes at `notes` appended to `out` in hex; false when there is none.
bool build_id_in(const std::uint8_t* notes, std::uint64_t size, std::string& out) {
  std::uint64_t at = 0;
  while (size >= 12 && at <= size - 12) {
    const std::uint64_t namesz = le(notes + at, 4), descsz = le(notes + at + 4, 4), type = le(notes + at + 8, 4);
    const std::uint64_t name_at = at + 12, desc_at = name_at + ((namesz + 3) & ~std::uint64_t{3});
    if (desc_at > size || descsz > size - desc_at) return false;
    if (type == 3 && namesz == 4 && std::memcmp(notes + name_at, "GNU", 4) == 0 && descsz > 0) {
      append_hex(out, notes + desc_at, static_cast<std::size_t>(descsz));
      return true;
    }
    at = desc_at + ((descsz + 3) & ~std::uint64_t{3});
  }
  return false;
}

// The first bytes of a file, read once: an ELF header, its program headers and its notes lie in
// the first page of a library as linkers lay them out, so one read serves all three; a range past
// it is read on its own.
struct FileHead {
  int fd = -1;
  std::uint64_t file_size = 0;
  std::size_t size = 0;
  std::uint8_t bytes[4096];  // left uninitialised: only the `size` bytes read are looked at
  std::uint8_t small[512];  // a short range past the head (a note block), read without allocating
  bool small_used = false;

  // The head with read(2) from the offset a descriptor just opened is at, 0: a load's other reads
  // bound read already, where the first pread(2) of a process costs a lazy symbol binding, 1,500
  // instructions on aarch64 with a dozen libraries loaded (issue 38).
  bool read_head() {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(sizeof bytes, file_size));
    for (std::size_t done = 0; done < want;) {
      const ssize_t n = ::read(fd, bytes + done, want - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<std::size_t>(n);
    }
    size = want;
    return true;
  }
  // `length` bytes at `offset` (checked against the file's size by the caller), from the head,
  // read into `small` (when `length` fits and it is free) or into `spill`; null when a read fails.
  const std::uint8_t* at(std::uint64_t offset, std::uint64_t length, std::vector<std::uint8_t>& spill) {
    if (offset <= size && length <= size - offset) return bytes + offset;
    if (length <= sizeof small && !small_used) {
      small_used = true;
      return read_exact(fd, offset, static_cast<std::size_t>(length), small) ? small : nullptr;
    }
    return read_at(fd, offset, static_cast<std::size_t>(length), spill) ? spill.data() : nullptr;
  }
};

// The GNU build id of the little-endian ELF file `fd` appended to `out` in hex, from its PT_NOTE
// segments; false when it has none.
bool append_elf_build_id(int fd, std::uint64_t file_size, std::string& out) {
  FileHead f;  // not value-initialised: zeroing its page cost more than reading it
  f.fd = fd;
  f.file_size = file_size;
  if (file_size < 64 || !f.read_head()) return false;
  const std::uint8_t* h = f.bytes;
  if (std::memcmp(h, "\x7f" "ELF", 4) != 0 || h[5] != 1) return false;
  const bool wide = h[4] == 2;
  const std::uint64_t phoff = wide ? le(h + 32, 8) : le(h + 28, 4);
  const std::uint64_t phentsize = le(h + (wide ? 54 : 42), 2), phnum = le(h + (wide ? 56 : 44), 2);
  if (phentsize < (wide ? 56u : 32u) || phnum > 256 || phoff > file_size || phnum * phentsize > file_size - phoff) {
    return false;
  }
  std::vector<std::uint8_t> ph_spill, notes_spill;  // empty unless a range lies past the first page
  const std::uint8_t* ph = f.at(phoff, phnum * phentsize, ph_spill);
  if (ph == nullptr) return false;
  for (std::uint64_t i = 0; i < phnum; ++i) {
    const std::uint8_t* p = ph + i * phentsize;
    if (le(p, 4) != 4) continue;  // PT_NOTE
    const std::uint64_t offset = wide ? le(p + 8, 8) : le(p + 4, 4), size = wide ? le(p + 32, 8) : le(p + 16, 4);
    if (size > 65536 || offset > file_size || size > file_size - offset) continue;
    const std::uint8_t* notes = f.at(offset, size, notes_spill);
    if (notes != nullptr && build_id_in(notes, size, out)) return true;
  }
  return false;
}

// "sha256:HEX" of the whole file appended to `out`, read a piece at a time (a library without a
// build id may be large: it is never held whole); false when a read fails.
bool append_content_digest(int fd, std::uint64_t file_size, std::string& out) {
  detail::Sha256 s;
  std::vector<std::uint8_t> piece;
  for (std::uint64_t at = 0; at < file_size;) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(file_size - at, 1u << 20));
    if (!read_at(fd, at, want, piece)) return false;
    s.update(piece.data(), want);
    at += want;
  }
  out.append("sha256:", 7);
  out += detail::to_hex(s.finish());
  return true;
}

}  // namespace

std::string digest_hex(const std::string& text) {
  return detail::to_hex(detail::sha256(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

std::string digest_hex(const std::string& first, const char* middle, const std::string& second) {
  detail::Sha256 s;
  s.update(first.data(), first.size());
  s.update(middle, std::strlen(middle));
  s.update(second.data(), second.size());
  return detail::to_hex(s.finish());
}

const std::string& container_digest(const Container& c) { return c.table_digest(); }

void append_library_identity(std::string& out, const std::string& path) {
  // O_NONBLOCK: a FIFO under a library's name is refused by fstat below, never waited on.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat sb;
  if (fd < 0 || ::fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    const char* why = fd < 0 ? std::strerror(errno) : "not a regular file";
    if (fd >= 0) ::close(fd);
    out.append("unreadable:", 11);
    out.append(why);
    return;
  }
  const std::uint64_t size = static_cast<std::uint64_t>(sb.st_size);
  const std::size_t mark = out.size();
  out.append("build-id:", 9);
  if (append_elf_build_id(fd, size, out)) {
    out += ':';
    append_decimal(out, size);
  } else if (out.resize(mark); size > (std::uint64_t{1} << 32) || !append_content_digest(fd, size, out)) {
    out.resize(mark);
    out.append("unreadable:", 11);
    append_decimal(out, size);
    out.append(" bytes", 6);
  }
  ::close(fd);
}

std::string library_identity(const std::string& path) {
  std::string out;
  append_library_identity(out, path);
  return out;
}

}  // namespace memory
}  // namespace fatpte
