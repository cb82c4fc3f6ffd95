// Container: a read-only mapping of a file (or borrowed memory) that passed the structural pass.
// The mapping is MAP_PRIVATE + PROT_READ: payload pointers handed out can never write to it.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "common/sha256.hpp"
#include "container/manifest_view.hpp"
#include "fatpte/container.hpp"
#include "fatpte/format.hpp"
#include "fatpte/result.hpp"
#include "fatpte/status.hpp"

namespace fatpte {
namespace {

Status io_error(const std::string& path, const char* what, int err) {
  return fail(Error::IO_ERROR, kNoOffset, "", "%s %s: %s", what, path.c_str(), std::strerror(err));
}

}  // namespace

Container::~Container() {
  if (mapping_ != nullptr) munmap(mapping_, static_cast<std::size_t>(buf_.size));
}

Result<std::unique_ptr<Container>> Container::open_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it (E0811, as Python).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return io_error(path, "cannot open", errno);
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error(path, "cannot stat", err);
  }
  if (!S_ISREG(sb.st_mode)) {
    ::close(fd);
    return fail(Error::NOT_A_FILE, kNoOffset, "",
                "%s is not a regular file (a directory, device, FIFO or socket): not a container", path.c_str());
  }
  std::unique_ptr<Container> c(new Container());
  c->path_ = path;
  const auto size = static_cast<std::uint64_t>(sb.st_size);
  if (size > 0) {
    void* m = mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return io_error(path, "cannot map", err);
    }
    c->mapping_ = m;
    c->buf_ = Bytes{static_cast<const std::uint8_t*>(m), size};
  }
  // The mapping keeps the file's pages; the descriptor is no longer needed.
  ::close(fd);
  Result<Structure> st = read_structure(c->buf_);
  if (!st.ok()) return st.error();
  c->structure_ = std::move(st).value();
  return c;
}

Result<std::unique_ptr<Container>> Container::open_memory(const void* data, std::size_t size) {
  if (data == nullptr && size != 0) {
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "", "data is NULL but size is %zu", size);
  }
  std::unique_ptr<Container> c(new Container());
  c->buf_ = Bytes{static_cast<const std::uint8_t*>(data), size};
  Result<Structure> st = read_structure(c->buf_);
  if (!st.ok()) return st.error();
  c->structure_ = std::move(st).value();
  return c;
}

const std::string& Container::table_digest() const {
  std::lock_guard<std::mutex> lock(digest_mutex_);
  if (table_digest_.empty()) {
    const std::uint64_t end = std::min<std::uint64_t>(header().table_end, buf_.size);
    table_digest_ = detail::to_hex(detail::sha256(buf_.data, static_cast<std::size_t>(end)));
  }
  return table_digest_;
}

Status Container::validate() const {
  // The content checks read every byte: of a container the C reader filled only in part, the
  // bytes never fetched are unreadable (Container::present).
  FATPTE_CHECK(present(0, buf_.size), Error::INVALID_ARGUMENT, kNoOffset, "",
               "the container was read only in part (fatpte_reader): validation needs every byte");
  Status status = check_integrity(buf_, structure_);
  // Passing meant the manifest's CRC32C, its identifier and every rule of its own (section 2 of
  // specs/nfat-manifest.md), which are all the manifest memo checks: a loader that validates and
  // then selects does not check the manifest twice.
  if (status.ok() && structure_.manifest_placed) {
    std::lock_guard<std::mutex> lock(manifest_mutex_);
    manifest_checked_ = true;
  }
  return status;
}

Result<Bytes> Container::payload(std::uint32_t index) const {
  if (index >= structure_.entries.size()) {
    return fail(Error::ENTRY_NOT_FOUND, kNoOffset, "", "entry index %u is out of range (the container holds %zu)",
                index, structure_.entries.size());
  }
  const Entry& e = structure_.entries[index];
  return Bytes{buf_.data + e.offset, e.size};
}

Result<std::uint32_t> Container::find(const std::string& key) const {
  for (const Entry& e : structure_.entries) {
    if (e.name == key) return e.index;
  }
  std::uint32_t found = 0;
  std::size_t matches = 0;
  for (const Entry& e : structure_.entries) {
    if (e.backend_id == key) {
      if (matches == 0) found = e.index;
      ++matches;
    }
  }
  if (matches == 1 || (matches > 1 && version() == format::kVersion1)) return found;  // v1 takes the first
  if (matches > 1) {
    return fail(Error::AMBIGUOUS_ENTRY, kNoOffset, "",
                "backend id '%s' matches %zu entries; name one of them", key.c_str(), matches);
  }
  return fail(Error::ENTRY_NOT_FOUND, kNoOffset, "", "no entry is named '%s' or has that backend id", key.c_str());
}

}  // namespace fatpte
