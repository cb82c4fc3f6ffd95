// The manifest verifier (manifest/verify.hpp): fatpte/manifest/codec.py's _Reader, call for call.
// Objects reached again through another offset are walked once and remembered with what they
// counted; a further reference adds that count again, so the table count and the expanded size
// are those of a reader that follows every reference, while the work is one walk of each
// distinct object.
#include "manifest/verify.hpp"

#include <cinttypes>
#include <cstdio>
#include <string>

#include "common/seen_table.hpp"
#include "common/text.hpp"
#include "fatpte/format_generated.h"

namespace fatpte {
namespace detail {
namespace {

namespace S = manifest_schema;

// A field path built on the stack as the walk descends, rendered only for an error:
// `manifest.entries[3].named_data[0]`.
struct PathNode {
  const PathNode* parent;
  const char* name;     // a field (or, without a parent, the root's name); unused for an index
  std::int64_t index;   // >= 0: the element `[index]` of the parent
};

std::string render(const PathNode* p) {
  if (p == nullptr) return "";
  if (p->index >= 0) return render(p->parent) + "[" + std::to_string(p->index) + "]";
  if (p->parent == nullptr) return p->name;
  return render(p->parent) + "." + p->name;
}

struct Counted {
  std::uint64_t tables;
  std::uint64_t spent;
};

// Keys of the walker's SeenTable: a table (position, type), a vector (position, element type)
// and a string (position) never share one.
std::uint64_t table_key(std::int64_t pos, std::int32_t type) {
  return (static_cast<std::uint64_t>(pos) * 64 + static_cast<std::uint64_t>(type)) * 4;
}
std::uint64_t vector_key(std::int64_t pos, std::uint64_t element) {
  return (static_cast<std::uint64_t>(pos) * 64 + element) * 4 + 1;
}
std::uint64_t string_key(std::int64_t pos) { return static_cast<std::uint64_t>(pos) * 4 + 2; }

class Walker {
 public:
  Walker(const std::uint8_t* b, std::uint64_t n, std::uint64_t base)
      : b_(b), n_(static_cast<std::int64_t>(n)), base_(base), budget_(manifest_work_budget(n)) {}

  Status root() {
    const PathNode path{nullptr, "manifest", -1};
    std::int64_t target = 0;
    FATPTE_RETURN_IF_ERROR(offset(0, &path, &target));
    return table(target, S::kRootTable, &path);
  }

  ManifestWork work() const { return ManifestWork{tables_, spent_, decoded_}; }

 private:
  template <typename... Args>
  Status bad(std::int64_t pos, const PathNode* path, Error code, const char* format, Args... args) const {
    char text[512];
    std::snprintf(text, sizeof text, format, args...);
    return fail(code, base_ + static_cast<std::uint64_t>(pos), render(path), "%s", text);
  }

  Status need(std::int64_t pos, std::int64_t size, std::int64_t align, const PathNode* path, const char* what) const {
    if (pos < 0 || size > n_ || pos > n_ - size) {
      return bad(pos, path, Error::MANIFEST_CORRUPT, "%s at %#" PRIx64 " (%" PRId64 " bytes) lies outside the "
                 "manifest of %#" PRIx64 " bytes", what, pos, size, n_);
    }
    if (pos % align != 0) {
      return bad(pos, path, Error::MANIFEST_CORRUPT, "%s at %#" PRIx64 " is not aligned to %" PRId64, what, pos,
                 align);
    }
    return Status();
  }

  std::uint64_t u(std::int64_t pos, int size) const {
    std::uint64_t v = 0;
    for (int k = size - 1; k >= 0; --k) v = (v << 8) | b_[pos + k];
    return v;
  }

  Status spend(std::uint64_t amount, std::int64_t pos, const PathNode* path) {
    spent_ += amount;
    if (spent_ > budget_) {
      return bad(pos, path, Error::MANIFEST_OVER_BUDGET, "the manifest of %" PRId64 " bytes expands past its work "
                 "budget of %" PRIu64 " bytes (%" PRIu64 " per byte plus 1 MiB): its offsets reach the same "
                 "objects too many times", n_, budget_, S::kExpansionFactor);
    }
    return Status();
  }

  Status count(std::uint64_t tables, std::int64_t pos, const PathNode* path) {
    tables_ += tables;
    if (tables_ > S::kMaxTables) {
      return bad(pos, path, Error::MANIFEST_CORRUPT, "the manifest references more than %" PRIu32 " tables",
                 S::kMaxTables);
    }
    return Status();
  }

  Status offset(std::int64_t pos, const PathNode* path, std::int64_t* target) {
    FATPTE_RETURN_IF_ERROR(need(pos, 4, 4, path, "offset"));
    const std::uint64_t rel = u(pos, 4);
    if (rel == 0 || rel >= (std::uint64_t{1} << 31)) {
      return bad(pos, path, Error::MANIFEST_CORRUPT, "offset %#" PRIx64 " at %#" PRIx64 " is zero or negative as "
                 "a signed offset", rel, pos);
    }
    *target = pos + static_cast<std::int64_t>(rel);
    if (*target >= n_) {
      return bad(pos, path, Error::MANIFEST_CORRUPT, "offset at %#" PRIx64 " points to %#" PRIx64 ", past the end "
                 "of the manifest at %#" PRIx64, pos, *target, n_);
    }
    return spend(4, pos, path);
  }

  Status string(std::int64_t pos, const PathNode* path) {
    if (const Counted* hit = seen_.find(string_key(pos))) return spend(hit->spent, pos, path);
    FATPTE_RETURN_IF_ERROR(need(pos, 4, 4, path, "string length"));
    const std::int64_t length = static_cast<std::int64_t>(u(pos, 4));
    if (length > n_ - pos - 5) {  // length, bytes and the terminating NUL must all fit
      return bad(pos, path, Error::MANIFEST_CORRUPT, "string at %#" PRIx64 " of %" PRId64 " bytes runs past the "
                 "end of the manifest", pos, length);
    }
    const std::int64_t end = pos + 4 + length;
    if (b_[end] != 0) {
      return bad(end, path, Error::MANIFEST_CORRUPT, "string at %#" PRIx64 " is not NUL-terminated", pos);
    }
    const std::int64_t bad_at = first_invalid_utf8(b_ + pos + 4, static_cast<std::size_t>(length));
    if (bad_at >= 0) {
      return bad(pos + 4 + bad_at, path, Error::MANIFEST_CORRUPT, "string at %#" PRIx64 " is not valid UTF-8", pos);
    }
    ++decoded_;
    const std::uint64_t cost = 4 + static_cast<std::uint64_t>(length);
    FATPTE_RETURN_IF_ERROR(spend(cost, pos, path));
    seen_.put(string_key(pos), Counted{0, cost});
    return Status();
  }

  // (position of element 0, count) of a vector of `elem`-byte elements at `pos`.
  Status vector(std::int64_t pos, std::int64_t elem, const PathNode* path, std::int64_t* start,
                std::int64_t* count) const {
    FATPTE_RETURN_IF_ERROR(need(pos, 4, 4, path, "vector length"));
    *count = static_cast<std::int64_t>(u(pos, 4));
    if (*count > (n_ - pos - 4) / elem) {
      return bad(pos, path, Error::MANIFEST_CORRUPT, "vector at %#" PRIx64 " claims %" PRId64 " elements of %" PRId64
                 " bytes, more than the manifest holds", pos, *count, elem);
    }
    *start = pos + 4;
    return Status();
  }

  Status table(std::int64_t pos, std::int32_t type, const PathNode* path) {
    const S::TableSpec& spec = S::kTables[type];
    const std::uint64_t key = table_key(pos, type);
    if (const Counted* hit = seen_.find(key)) {
      FATPTE_RETURN_IF_ERROR(count(hit->tables, pos, path));
      return spend(hit->spent, pos, path);
    }
    const Counted before{tables_, spent_};
    if (++depth_ > S::kMaxDepth) {
      return bad(pos, path, Error::MANIFEST_CORRUPT, "tables nest deeper than %" PRIu32, S::kMaxDepth);
    }
    FATPTE_RETURN_IF_ERROR(count(1, pos, path));
    FATPTE_RETURN_IF_ERROR(need(pos, 4, 4, path, "table"));
    const auto soffset = static_cast<std::int32_t>(static_cast<std::uint32_t>(u(pos, 4)));
    const std::int64_t vt = pos - soffset;
    if (vt < 0 || vt > n_ - 2 || vt % 2 != 0) {  // reported at the soffset that points there
      return bad(pos, path, Error::MANIFEST_CORRUPT, "the vtable of table %s at %#" PRIx64 " would be at %" PRId64
                 ", outside the manifest or not aligned to 2", spec.name, pos, vt);
    }
    const auto vsize = static_cast<std::int64_t>(u(vt, 2));
    if (vsize % 2 != 0) {
      return bad(vt, path, Error::MANIFEST_CORRUPT, "vtable of %s at %#" PRIx64 " has odd size %" PRId64, spec.name,
                 vt, vsize);
    }
    FATPTE_RETURN_IF_ERROR(need(vt, vsize, 2, path, "vtable"));
    FATPTE_RETURN_IF_ERROR(spend(4, pos, path));
    ++decoded_;
    for (std::uint32_t i = 0; i < spec.field_count; ++i) {
      const S::FieldSpec& f = spec.fields[i];
      const std::int64_t slot = 4 + 2 * static_cast<std::int64_t>(i);
      const std::int64_t voff = slot + 2 <= vsize ? static_cast<std::int64_t>(u(vt + slot, 2)) : 0;
      const PathNode fpath{path, f.name, -1};
      if (voff == 0) {
        if (f.required) {
          return bad(pos, &fpath, Error::MANIFEST_CORRUPT, "required field %s.%s is absent", spec.name, f.name);
        }
        continue;
      }
      FATPTE_RETURN_IF_ERROR(field(pos + voff, f, &fpath));
    }
    --depth_;
    seen_.put(key, Counted{tables_ - before.tables, spent_ - before.spent});
    return Status();
  }

  Status field(std::int64_t fp, const S::FieldSpec& f, const PathNode* path) {
    using K = S::FieldKind;
    if (f.kind == K::kU8 || f.kind == K::kU32 || f.kind == K::kU64 || f.kind == K::kF64) {
      const std::int64_t size = f.kind == K::kU8 ? 1 : f.kind == K::kU32 ? 4 : 8;
      FATPTE_RETURN_IF_ERROR(need(fp, size, size, path, "field"));
      return spend(static_cast<std::uint64_t>(size), fp, path);
    }
    std::int64_t target = 0;
    FATPTE_RETURN_IF_ERROR(offset(fp, path, &target));
    if (f.kind == K::kString) return string(target, path);
    if (f.kind == K::kTable) return table(target, f.target, path);
    std::int64_t start = 0, count_ = 0;
    if (f.kind == K::kByteVector || f.kind == K::kInt32Vector) {
      const std::int64_t elem = f.kind == K::kByteVector ? 1 : 4;
      FATPTE_RETURN_IF_ERROR(vector(target, elem, path, &start, &count_));
      return spend(4 + static_cast<std::uint64_t>(count_ * elem), target, path);
    }
    const bool strings = f.kind == K::kStringVector;
    const std::uint64_t key = vector_key(target, strings ? 63u : static_cast<std::uint64_t>(f.target));
    if (const Counted* hit = seen_.find(key)) {
      FATPTE_RETURN_IF_ERROR(count(hit->tables, target, path));
      return spend(hit->spent, target, path);
    }
    const Counted before{tables_, spent_};
    FATPTE_RETURN_IF_ERROR(vector(target, 4, path, &start, &count_));
    FATPTE_RETURN_IF_ERROR(spend(4, target, path));
    ++decoded_;
    for (std::int64_t k = 0; k < count_; ++k) {
      const PathNode epath{path, nullptr, k};
      std::int64_t element = 0;
      FATPTE_RETURN_IF_ERROR(offset(start + 4 * k, &epath, &element));
      FATPTE_RETURN_IF_ERROR(strings ? string(element, &epath) : table(element, f.target, &epath));
    }
    seen_.put(key, Counted{tables_ - before.tables, spent_ - before.spent});
    return Status();
  }

  const std::uint8_t* b_;
  std::int64_t n_;
  std::uint64_t base_;
  std::uint64_t budget_;
  std::uint32_t depth_ = 0;
  std::uint64_t tables_ = 0;
  std::uint64_t spent_ = 0;
  std::uint64_t decoded_ = 0;
  SeenTable<Counted> seen_;  // tables, vectors and strings walked, with what each counted
};

}  // namespace

std::uint64_t manifest_work_budget(std::uint64_t size) noexcept {
  return S::kExpansionFactor * size + S::kExpansionAllowance;
}

Status verify_manifest(const std::uint8_t* data, std::uint64_t size, std::uint64_t base, ManifestWork* work) {
  if (size < 8) {
    return fail(Error::MANIFEST_CORRUPT, base, "manifest",
                "the manifest is %" PRIu64 " bytes, too short for a root offset and an identifier", size);
  }
  if (!(data[4] == 'N' && data[5] == 'F' && data[6] == 'M' && data[7] == 'F')) {
    return fail(Error::BAD_MANIFEST_IDENTIFIER, base + 4, "manifest", "the manifest's bytes 4..8 are not 'NFMF'");
  }
  Walker w(data, size, base);
  Status s = w.root();
  if (work != nullptr) *work = w.work();
  return s;
}

}  // namespace detail
}  // namespace fatpte
