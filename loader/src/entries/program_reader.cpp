// Reading a program as fatpte/executorch/pte.py reads it (entries/program_reader.hpp). Positions
// are signed 64-bit offsets from the program's first byte, as Python's integers are: a vtable
// before the buffer is a negative position, refused by `check` before any byte is read.
#include "entries/program_reader.hpp"

#include <cinttypes>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "common/text.hpp"
#include "fatpte/format_generated.h"
#include "value/scalar_type.hpp"

namespace fatpte {
namespace entries {
namespace {

using Pos = std::int64_t;
constexpr int kMaxDepth = 64;                      // flatbuf.py MAX_DEPTH
constexpr std::uint64_t kObjectBudget = 1000000;   // flatbuf.py DEFAULT_BUDGET, plus the buffer's size
constexpr Pos kNone = -1;                          // an absent field or table

// A table whose position, vtable and extent lie inside the buffer (flatbuf.py Table).
struct Table {
  Pos pos = kNone;
  Pos vtable = 0;
  std::uint32_t vt_size = 0;
  std::uint32_t table_size = 0;
  int depth = 0;
  bool present() const { return pos != kNone; }
};

struct Vec {
  Pos start = kNone;  // element 0; kNone: the field is absent
  std::uint64_t count = 0;
};

// flatbuf.py's Buffer and Table: every access checked before it is made, the budgets spent.
class Walker {
 public:
  // A buffer of `size` bytes at `p`, which lies at `at` in the file; an error Python gives no
  // offset is reported at `none_at` (the program entry's payload, where program_findings puts it).
  Walker(const std::uint8_t* p, std::uint64_t size, std::uint64_t at, const std::string& field, std::uint64_t none_at)
      : p_(p), size_(static_cast<Pos>(size)), at_(at), none_at_(none_at), field_(field), budget_(kObjectBudget + size),
        text_limit_(manifest_schema::kExpansionFactor * size + manifest_schema::kExpansionAllowance) {}

  // An error at `pos` (Python's offset) or, for kNone, at none_at.
  template <typename... Args>
  Status error(Error code, Pos pos, const char* format, Args... args) const {
    return fail(code, pos == kNone ? none_at_ : at_ + static_cast<std::uint64_t>(pos), field_, format, args...);
  }

  Status check(Pos pos, Pos length) const {
    if (pos < 0 || length < 0 || length > size_ || pos > size_ - length) {
      return error(Error::ET_FLATBUFFER_OUT_OF_BOUNDS, pos >= 0 && pos <= size_ ? pos : kNone,
                   "%" PRId64 " bytes at %" PRId64 " reach past the end of the flatbuffer at %" PRId64, length, pos,
                   size_);
    }
    return Status();
  }

  Status spend(std::uint64_t n, Pos pos) {
    if (n > budget_) {
      return error(Error::ET_FLATBUFFER_TOO_COMPLEX, pos, "reading the flatbuffer visits more objects than the "
                   "reader's limit of %" PRIu64, kObjectBudget + static_cast<std::uint64_t>(size_));
    }
    budget_ -= n;
    return Status();
  }

  Status spend_text(std::uint64_t n, Pos pos) {
    text_ += n;
    if (text_ > text_limit_) {
      return error(Error::ET_FLATBUFFER_TOO_COMPLEX, pos, "reading the flatbuffer decodes more than %" PRIu64
                   " bytes of text (16 per byte of the buffer plus 1 MiB)", text_limit_);
    }
    return Status();
  }

  // The little-endian value of `width` (1, 2, 4 or 8) bytes at `pos`, which a check has bounded.
  std::uint64_t read(Pos pos, int width) const {
    const std::uint8_t* at = p_ + pos;
    switch (width) {
      case 1: return at[0];
      case 2: return static_cast<std::uint64_t>(at[0]) | (static_cast<std::uint64_t>(at[1]) << 8);
      case 4: return detail::read_u32le(at);
      default: return detail::read_u64le(at);
    }
  }

  Status u32(Pos pos, std::uint64_t& out) const {
    FATPTE_RETURN_IF_ERROR(check(pos, 4));
    out = read(pos, 4);
    return Status();
  }

  Status table_at(Pos pos, int depth, Table& out);
  Status field_pos(const Table& t, int slot, int width, Pos& at) const;
  Status integer(const Table& t, int slot, int width, std::uint64_t& out) const;
  // A byte enum of the schema whose values are 0..`last` (flatbuf.py enum_name): its value, or
  // ET_BAD_VALUE at the table naming `what`.
  Status enum8(const Table& t, int slot, int last, const char* what, std::uint64_t& out) const;
  Status target(const Table& t, int slot, Pos& out) const;
  Status table(const Table& t, int slot, Table& out);
  Status required_table(const Table& t, int slot, Table& out);
  Status string_body(Pos target);
  Status string(const Table& t, int slot, bool& present);
  // A string's text, read after string() passed: "" when absent.
  Status text(const Table& t, int slot, bool& present, std::string& out);
  Status vector(const Table& t, int slot, int elem_size, Vec& out);
  Status tables(const Table& t, int slot, std::vector<Table>& out);
  Status union_value(const Table& t, int type_slot, int value_slot, std::uint64_t& tag, Table& value);
  Pos size() const { return size_; }
  // The bytes of the string whose length is at `target`, which string_body has checked.
  std::string str(Pos target) const {
    return std::string(reinterpret_cast<const char*>(p_ + target + 4), static_cast<std::size_t>(read(target, 4)));
  }

 private:
  const std::uint8_t* p_;
  Pos size_;
  std::uint64_t at_;
  std::uint64_t none_at_;
  const std::string& field_;
  std::uint64_t budget_;
  std::uint64_t text_ = 0;
  std::uint64_t text_limit_;
};

Status Walker::table_at(Pos pos, int depth, Table& out) {
  if (depth > kMaxDepth) {
    return error(Error::ET_FLATBUFFER_TOO_COMPLEX, pos, "tables nest deeper than %d levels", kMaxDepth);
  }
  FATPTE_RETURN_IF_ERROR(spend(1, pos));
  FATPTE_RETURN_IF_ERROR(check(pos, 4));
  const auto soffset = static_cast<std::int32_t>(static_cast<std::uint32_t>(read(pos, 4)));
  const Pos vtable = pos - soffset;
  FATPTE_RETURN_IF_ERROR(check(vtable, 4));
  const auto vt_size = static_cast<std::uint32_t>(read(vtable, 2));
  const auto table_size = static_cast<std::uint32_t>(read(vtable + 2, 2));
  if (vt_size < 4 || vt_size % 2 != 0) {
    return error(Error::ET_FLATBUFFER_OUT_OF_BOUNDS, vtable, "vtable size %u is below 4 or odd", vt_size);
  }
  FATPTE_RETURN_IF_ERROR(check(vtable, vt_size));
  if (table_size < 4) return error(Error::ET_FLATBUFFER_OUT_OF_BOUNDS, vtable, "table size %u is below 4", table_size);
  FATPTE_RETURN_IF_ERROR(check(pos, table_size));
  out = Table{pos, vtable, vt_size, table_size, depth};
  return Status();
}

// The position of field `slot` (schema order), kNone when absent; inside its table.
Status Walker::field_pos(const Table& t, int slot, int width, Pos& at) const {
  at = kNone;
  const std::uint32_t voffset = 4 + 2 * static_cast<std::uint32_t>(slot);
  if (voffset >= t.vt_size) return Status();
  const auto offset = static_cast<std::uint32_t>(read(t.vtable + voffset, 2));
  if (offset == 0) return Status();
  if (static_cast<std::int64_t>(offset) > static_cast<std::int64_t>(t.table_size) - width) {
    return error(Error::ET_FLATBUFFER_OUT_OF_BOUNDS, t.pos, "field at table offset %u with %d bytes lies outside the "
                 "table of %u", offset, width, t.table_size);
  }
  at = t.pos + offset;
  return Status();
}

// A scalar field's bits (0 when absent, every default pte.py reads being 0).
Status Walker::enum8(const Table& t, int slot, int last, const char* what, std::uint64_t& out) const {
  FATPTE_RETURN_IF_ERROR(integer(t, slot, 1, out));
  const auto value = static_cast<std::int8_t>(out);
  if (value < 0 || value > last) {
    return error(Error::ET_BAD_VALUE, t.pos, "value %d is not defined by the schema's enum (%s)", value, what);
  }
  return Status();
}

Status Walker::integer(const Table& t, int slot, int width, std::uint64_t& out) const {
  Pos at = kNone;
  FATPTE_RETURN_IF_ERROR(field_pos(t, slot, width, at));
  out = at == kNone ? 0 : read(at, width);
  return Status();
}

Status Walker::target(const Table& t, int slot, Pos& out) const {
  Pos at = kNone;
  out = kNone;
  FATPTE_RETURN_IF_ERROR(field_pos(t, slot, 4, at));
  if (at == kNone) return Status();
  const Pos target = at + static_cast<Pos>(read(at, 4));
  FATPTE_RETURN_IF_ERROR(check(target, 4));
  out = target;
  return Status();
}

Status Walker::table(const Table& t, int slot, Table& out) {
  Pos at = kNone;
  out = Table{};
  FATPTE_RETURN_IF_ERROR(target(t, slot, at));
  return at == kNone ? Status() : table_at(at, t.depth + 1, out);
}

Status Walker::required_table(const Table& t, int slot, Table& out) {
  FATPTE_RETURN_IF_ERROR(table(t, slot, out));
  return out.present() ? Status() : error(Error::ET_BAD_VALUE, t.pos, "a required table is absent");
}

// flatbuf.py _string_body: the terminating NUL inside the buffer and NUL, the text budget, then UTF-8.
Status Walker::string_body(Pos target) {
  std::uint64_t length = 0;
  FATPTE_RETURN_IF_ERROR(u32(target, length));
  const Pos start = target + 4;
  FATPTE_RETURN_IF_ERROR(check(start, static_cast<Pos>(length) + 1));
  const Pos end = start + static_cast<Pos>(length);
  if (p_[end] != 0) {
    return error(Error::ET_BAD_VALUE, target, "string of %" PRIu64 " bytes ends in byte 0x%02x at %" PRIu64 ", not its "
                 "terminating NUL", length, p_[end], at_ + static_cast<std::uint64_t>(end));
  }
  FATPTE_RETURN_IF_ERROR(spend_text(4 + length, target));
  if (!detail::valid_utf8(p_ + start, static_cast<std::size_t>(length))) {
    return error(Error::ET_BAD_VALUE, target, "string is not UTF-8");
  }
  return Status();
}

Status Walker::string(const Table& t, int slot, bool& present) {
  Pos at = kNone;
  FATPTE_RETURN_IF_ERROR(target(t, slot, at));
  present = at != kNone;
  return present ? string_body(at) : Status();
}

Status Walker::text(const Table& t, int slot, bool& present, std::string& out) {
  Pos at = kNone;
  out.clear();
  FATPTE_RETURN_IF_ERROR(string(t, slot, present));
  if (!present) return Status();
  FATPTE_RETURN_IF_ERROR(target(t, slot, at));
  out.assign(reinterpret_cast<const char*>(p_ + at + 4), static_cast<std::size_t>(read(at, 4)));
  return Status();
}

Status Walker::vector(const Table& t, int slot, int elem_size, Vec& out) {
  Pos at = kNone;
  out = Vec{};
  FATPTE_RETURN_IF_ERROR(target(t, slot, at));
  if (at == kNone) return Status();
  const std::uint64_t count = read(at, 4);
  const Pos start = at + 4;
  if (count > static_cast<std::uint64_t>(size_ - start) / static_cast<std::uint64_t>(elem_size)) {
    return error(Error::ET_FLATBUFFER_OUT_OF_BOUNDS, at, "vector of %" PRIu64 " elements of %d bytes reaches past the "
                 "end of the flatbuffer at %" PRId64, count, elem_size, size_);
  }
  FATPTE_RETURN_IF_ERROR(spend(elem_size > 1 ? count : 1, at));
  out = Vec{start, count};
  return Status();
}

// Every table of a vector of tables, each verified before any is read (flatbuf.py tables()).
Status Walker::tables(const Table& t, int slot, std::vector<Table>& out) {
  Vec v;
  out.clear();
  FATPTE_RETURN_IF_ERROR(vector(t, slot, 4, v));
  for (std::uint64_t i = 0; i < v.count; ++i) {
    const Pos at = v.start + static_cast<Pos>(4 * i);
    std::uint64_t offset = 0;
    FATPTE_RETURN_IF_ERROR(u32(at, offset));
    Table table;
    FATPTE_RETURN_IF_ERROR(table_at(at + static_cast<Pos>(offset), t.depth + 1, table));
    out.push_back(table);
  }
  return Status();
}

Status Walker::union_value(const Table& t, int type_slot, int value_slot, std::uint64_t& tag, Table& value) {
  value = Table{};
  FATPTE_RETURN_IF_ERROR(integer(t, type_slot, 1, tag));
  return tag == 0 ? Status() : table(t, value_slot, value);
}

std::int64_t as_signed(std::uint64_t bits, int width) {
  const int shift = 64 - 8 * width;
  return static_cast<std::int64_t>(bits << shift) >> shift;
}

// pte.py's read_program, in its order.
class ProgramReader {
 public:
  ProgramReader(Walker& w, std::uint64_t payload_size) : w_(w), payload_size_(payload_size) {}
  Status read(const Table& root, bool has_header, std::uint64_t base, std::uint64_t limit);

 private:
  struct Segment {
    std::uint64_t size;
  };
  Status segments(const Table& root, bool has_header, std::uint64_t base, std::uint64_t limit);
  Status segment(std::uint64_t index, const Table& t) const;
  Status subsegment(const Table& t);
  Status method(const Table& plan);
  Status values(const Table& plan, std::vector<std::uint8_t>& kinds);
  Status tensor(const Table& t);
  Status sizes(const Table& t, std::uint64_t element);
  Status indices(const Table& t, int slot, std::uint64_t count);
  Status in_values(const Table& t, std::int64_t v, std::uint64_t count) const;
  Status instructions(const Table& chain, std::uint64_t n, std::uint64_t operators, std::uint64_t delegates);
  Status delegate(const Table& d);

  // The path Python's reader names a tensor's field by, for messages: made only on a failure.
  std::string tensor_path(const char* leaf) const {
    return "root.execution_plan[" + std::to_string(plan_) + "].values[" + std::to_string(value_) + "].val" + leaf;
  }

  Walker& w_;
  std::uint64_t payload_size_;
  std::vector<Segment> segments_;
  std::uint64_t inline_count_ = 0;
  std::uint64_t plan_ = 0;   // the method being read
  std::uint64_t value_ = 0;  // the value whose tensor is being read
};

constexpr std::uint64_t kTensor = 5, kInt = 2, kIntList = 7, kValueKinds = 12;
constexpr std::uint64_t kKernelCall = 1, kDelegateCall = 2, kMoveCall = 3, kJumpFalseCall = 4, kFreeCall = 5;

Status ProgramReader::read(const Table& root, bool has_header, std::uint64_t base, std::uint64_t limit) {
  FATPTE_RETURN_IF_ERROR(segments(root, has_header, base, limit));
  std::vector<Table> list;
  FATPTE_RETURN_IF_ERROR(w_.tables(root, 3, list));
  inline_count_ = list.size();
  for (const Table& t : list) {
    Vec data;
    FATPTE_RETURN_IF_ERROR(w_.vector(t, 0, 1, data));
  }
  FATPTE_RETURN_IF_ERROR(w_.tables(root, 1, list));
  for (plan_ = 0; plan_ < list.size(); ++plan_) FATPTE_RETURN_IF_ERROR(method(list[plan_]));
  FATPTE_RETURN_IF_ERROR(w_.tables(root, 7, list));
  for (const Table& t : list) {
    bool key = false;
    FATPTE_RETURN_IF_ERROR(w_.string(t, 0, key));
    if (!key) return w_.error(Error::ET_BAD_VALUE, t.pos, "a required string is absent (named_data key)");
    std::uint64_t index = 0;
    FATPTE_RETURN_IF_ERROR(w_.integer(t, 1, 4, index));
    FATPTE_RETURN_IF_ERROR(segment(index, t));
  }
  Table constant;
  FATPTE_RETURN_IF_ERROR(w_.table(root, 5, constant));
  if (constant.present()) FATPTE_RETURN_IF_ERROR(subsegment(constant));
  FATPTE_RETURN_IF_ERROR(w_.tables(root, 6, list));
  for (const Table& t : list) FATPTE_RETURN_IF_ERROR(subsegment(t));
  std::uint64_t version = 0;
  FATPTE_RETURN_IF_ERROR(w_.integer(root, 0, 4, version));
  return w_.tables(root, 2, list);  // constant_buffer: counted
}

// pte.py _segments: without segment data (no extended header, or a segment_base_offset of 0)
// only empty segments; otherwise each inside [base, limit).
Status ProgramReader::segments(const Table& root, bool has_header, std::uint64_t base, std::uint64_t limit) {
  if (!has_header || base == 0) base = limit = payload_size_;
  std::vector<Table> list;
  FATPTE_RETURN_IF_ERROR(w_.tables(root, 4, list));
  for (const Table& t : list) {
    std::uint64_t off = 0, size = 0;
    FATPTE_RETURN_IF_ERROR(w_.integer(t, 0, 8, off));
    FATPTE_RETURN_IF_ERROR(w_.integer(t, 1, 8, size));
    if (size > limit - base || off > limit - base - size) {
      return w_.error(Error::ET_SEGMENT_OUT_OF_BOUNDS, t.pos, "segment of %" PRIu64 " bytes at %" PRIu64 "+%" PRIu64
                      " reaches past the segment data that ends at %" PRIu64, size, base, off, limit);
    }
    segments_.push_back(Segment{size});
  }
  return Status();
}

Status ProgramReader::segment(std::uint64_t index, const Table& t) const {
  if (index >= segments_.size()) {
    return w_.error(Error::ET_BAD_REFERENCE, t.pos, "segment index %" PRIu64 " is past the %zu segments of the "
                    "program", index, segments_.size());
  }
  return Status();
}

Status ProgramReader::subsegment(const Table& t) {
  std::uint64_t index = 0;
  FATPTE_RETURN_IF_ERROR(w_.integer(t, 0, 4, index));
  Vec offsets;
  FATPTE_RETURN_IF_ERROR(w_.vector(t, 1, 8, offsets));
  if (offsets.count == 0) return Status();
  FATPTE_RETURN_IF_ERROR(segment(index, t));
  for (std::uint64_t i = 0; i < offsets.count; ++i) {
    const std::uint64_t off = w_.read(offsets.start + static_cast<Pos>(8 * i), 8);
    if (off > segments_[index].size) {
      return w_.error(Error::ET_SEGMENT_OUT_OF_BOUNDS, t.pos, "sub-offset %" PRIu64 " is past the end of segment %"
                      PRIu64 " (%" PRIu64 " bytes)", off, index, segments_[index].size);
    }
  }
  return Status();
}

Status ProgramReader::in_values(const Table& t, std::int64_t v, std::uint64_t count) const {
  if (v < 0 || static_cast<std::uint64_t>(v) >= count) {
    return w_.error(Error::ET_BAD_REFERENCE, t.pos, "value index %" PRId64 " is outside the %" PRIu64
                    " values of the method", v, count);
  }
  return Status();
}

Status ProgramReader::indices(const Table& t, int slot, std::uint64_t count) {
  Vec v;
  FATPTE_RETURN_IF_ERROR(w_.vector(t, slot, 4, v));
  for (std::uint64_t i = 0; i < v.count; ++i) {
    FATPTE_RETURN_IF_ERROR(in_values(t, as_signed(w_.read(v.start + static_cast<Pos>(4 * i), 4), 4), count));
  }
  return Status();
}

// pte.py _method: name, values, operators, delegates, chains, inputs, outputs, buffer sizes.
Status ProgramReader::method(const Table& plan) {
  bool present = false;
  FATPTE_RETURN_IF_ERROR(w_.string(plan, 0, present));
  if (!present) return w_.error(Error::ET_BAD_VALUE, plan.pos, "a required string is absent (execution_plan name)");
  std::vector<std::uint8_t> kinds;
  FATPTE_RETURN_IF_ERROR(values(plan, kinds));
  const std::uint64_t n = kinds.size();
  std::vector<Table> list;
  FATPTE_RETURN_IF_ERROR(w_.tables(plan, 6, list));
  const std::uint64_t operators = list.size();
  for (const Table& op : list) {
    FATPTE_RETURN_IF_ERROR(w_.string(op, 0, present));
    FATPTE_RETURN_IF_ERROR(w_.string(op, 1, present));
  }
  FATPTE_RETURN_IF_ERROR(w_.tables(plan, 7, list));
  const std::uint64_t delegates = list.size();
  for (const Table& d : list) FATPTE_RETURN_IF_ERROR(delegate(d));
  FATPTE_RETURN_IF_ERROR(w_.tables(plan, 5, list));
  for (const Table& chain : list) {
    FATPTE_RETURN_IF_ERROR(indices(chain, 0, n));
    FATPTE_RETURN_IF_ERROR(indices(chain, 1, n));
    FATPTE_RETURN_IF_ERROR(instructions(chain, n, operators, delegates));
  }
  FATPTE_RETURN_IF_ERROR(indices(plan, 3, n));
  FATPTE_RETURN_IF_ERROR(indices(plan, 4, n));
  Vec sizes;
  return w_.vector(plan, 8, 8, sizes);
}

// pte.py _values: each value's kind (a tensor's fields read as it is met), then each int list's
// items, each a value that is an int.
Status ProgramReader::values(const Table& plan, std::vector<std::uint8_t>& kinds) {
  std::vector<Table> values, lists;
  FATPTE_RETURN_IF_ERROR(w_.tables(plan, 2, values));
  for (const Table& v : values) {
    std::uint64_t tag = 0;
    Table val;
    FATPTE_RETURN_IF_ERROR(w_.union_value(v, 0, 1, tag, val));
    if (tag >= kValueKinds) {
      return w_.error(Error::ET_BAD_VALUE, v.pos, "value %" PRIu64 " is not defined by the schema's enum (val_type)",
                      tag);
    }
    kinds.push_back(static_cast<std::uint8_t>(tag));
    if (tag == kTensor) {
      if (!val.present()) return w_.error(Error::ET_BAD_VALUE, v.pos, "a tensor value has no tensor");
      value_ = kinds.size() - 1;
      FATPTE_RETURN_IF_ERROR(tensor(val));
    } else if (tag == kIntList && val.present()) {
      lists.push_back(val);
    }
  }
  for (const Table& list : lists) {
    Vec items;
    FATPTE_RETURN_IF_ERROR(w_.vector(list, 0, 8, items));
    for (std::uint64_t j = 0; j < items.count; ++j) {
      const auto item = static_cast<std::int64_t>(w_.read(items.start + static_cast<Pos>(8 * j), 8));
      FATPTE_RETURN_IF_ERROR(in_values(list, item, kinds.size()));
      if (kinds[static_cast<std::size_t>(item)] != kInt) {
        return w_.error(Error::ET_BAD_VALUE, list.pos, "an int list's item is value %" PRId64 ", not an int", item);
      }
    }
  }
  return Status();
}

// pte.py _tensor, its fields in the order it reads them.
Status ProgramReader::tensor(const Table& t) {
  std::uint64_t bits = 0;
  FATPTE_RETURN_IF_ERROR(w_.integer(t, 0, 1, bits));
  const auto code = static_cast<std::int8_t>(bits);
  const std::uint64_t element = program_element_size(code);
  if (element == 0) {
    return w_.error(Error::ET_BAD_VALUE, t.pos, "value %d is not defined by the schema's enum (%s)", code,
                    tensor_path(".scalar_type").c_str());
  }
  FATPTE_RETURN_IF_ERROR(sizes(t, element));
  FATPTE_RETURN_IF_ERROR(w_.enum8(t, 8, 2, tensor_path(".shape_dynamism").c_str(), bits));
  Table extra;
  FATPTE_RETURN_IF_ERROR(w_.table(t, 9, extra));
  if (extra.present()) {
    bool fqn = false;
    FATPTE_RETURN_IF_ERROR(w_.string(extra, 1, fqn));
    FATPTE_RETURN_IF_ERROR(w_.enum8(extra, 2, 1, tensor_path(".extra_tensor_info.location").c_str(), bits));
  }
  Table allocation;
  FATPTE_RETURN_IF_ERROR(w_.table(t, 6, allocation));
  FATPTE_RETURN_IF_ERROR(w_.integer(t, 5, 4, bits));
  Vec dim_order;
  return w_.vector(t, 3, 1, dim_order);
}

// pte.py _sizes: present, each at least 0, the element count below 2^63 and its bytes below 2^64.
Status ProgramReader::sizes(const Table& t, std::uint64_t element) {
  constexpr std::uint64_t kSsizeLimit = std::uint64_t{1} << 63;
  Vec v;
  FATPTE_RETURN_IF_ERROR(w_.vector(t, 2, 4, v));
  if (v.start == kNone) {
    return w_.error(Error::ET_BAD_VALUE, t.pos, "a required vector is absent (%s)", tensor_path(".sizes").c_str());
  }
  std::uint64_t count = 1;
  for (std::uint64_t k = 0; k < v.count; ++k) {
    const std::int64_t size = as_signed(w_.read(v.start + static_cast<Pos>(4 * k), 4), 4);
    if (size < 0) {
      return w_.error(Error::ET_BAD_VALUE, t.pos, "size %" PRId64 " is negative (%s)", size,
                      tensor_path((".sizes[" + std::to_string(k) + "]").c_str()).c_str());
    }
    if (size != 0 && count > (kSsizeLimit - 1) / static_cast<std::uint64_t>(size)) {
      return w_.error(Error::ET_BAD_VALUE, t.pos, "the element count passes 2^63 - 1 at size %" PRIu64 " (%s)", k,
                      tensor_path(".sizes").c_str());
    }
    count *= static_cast<std::uint64_t>(size);
  }
  if (count > UINT64_MAX / element) {
    return w_.error(Error::ET_BAD_VALUE, t.pos, "%" PRIu64 " elements of %" PRIu64 " bytes are past 2^64 - 1 bytes "
                    "(%s)", count, element, tensor_path(".sizes").c_str());
  }
  return Status();
}

// pte.py _instructions: each instruction's references by kind.
Status ProgramReader::instructions(const Table& chain, std::uint64_t n, std::uint64_t operators,
                                   std::uint64_t delegates) {
  std::vector<Table> list;
  FATPTE_RETURN_IF_ERROR(w_.tables(chain, 2, list));
  for (const Table& ins : list) {
    std::uint64_t tag = 0, bits = 0;
    Table args;
    FATPTE_RETURN_IF_ERROR(w_.union_value(ins, 0, 1, tag, args));
    if (!args.present()) continue;
    if (tag == kKernelCall || tag == kDelegateCall) {
      FATPTE_RETURN_IF_ERROR(w_.integer(args, 0, 4, bits));
      const std::int64_t index = as_signed(bits, 4);
      const std::uint64_t limit = tag == kKernelCall ? operators : delegates;
      if (index < 0 || static_cast<std::uint64_t>(index) >= limit) {
        return w_.error(Error::ET_BAD_REFERENCE, args.pos, "%s index %" PRId64 " is outside the %" PRIu64 " %ss",
                        tag == kKernelCall ? "operator" : "delegate", index, limit,
                        tag == kKernelCall ? "operator" : "delegate");
      }
      FATPTE_RETURN_IF_ERROR(indices(args, 1, n));
      continue;
    }
    const int fields = tag == kMoveCall ? 2 : (tag == kJumpFalseCall || tag == kFreeCall) ? 1 : 0;
    for (int slot = 0; slot < fields; ++slot) {
      FATPTE_RETURN_IF_ERROR(w_.integer(args, slot, 4, bits));
      FATPTE_RETURN_IF_ERROR(in_values(args, as_signed(bits, 4), n));
    }
  }
  return Status();
}

// pte.py _delegate: its id, its processed reference (location, then the inline entry or segment
// it names), each compile spec's key and value.
Status ProgramReader::delegate(const Table& d) {
  bool present = false;
  FATPTE_RETURN_IF_ERROR(w_.string(d, 0, present));
  if (!present) return w_.error(Error::ET_BAD_VALUE, d.pos, "a required string is absent (delegate id)");
  Pos id = kNone;
  FATPTE_RETURN_IF_ERROR(w_.target(d, 0, id));
  if (w_.read(id, 4) == 0) return w_.error(Error::ET_BAD_VALUE, d.pos, "a delegate's backend id is empty");
  Table ref;
  FATPTE_RETURN_IF_ERROR(w_.required_table(d, 1, ref));
  std::uint64_t location = 0, index = 0;
  FATPTE_RETURN_IF_ERROR(w_.enum8(ref, 0, 1, "location", location));
  FATPTE_RETURN_IF_ERROR(w_.integer(ref, 1, 4, index));
  if (location == 0 && index >= inline_count_) {
    return w_.error(Error::ET_BAD_REFERENCE, ref.pos, "inline data index %" PRIu64 " is past the %" PRIu64
                    " entries of backend_delegate_data", index, inline_count_);
  }
  if (location == 1) FATPTE_RETURN_IF_ERROR(segment(index, ref));
  std::vector<Table> specs;
  FATPTE_RETURN_IF_ERROR(w_.tables(d, 2, specs));
  for (const Table& cs : specs) {
    FATPTE_RETURN_IF_ERROR(w_.string(cs, 0, present));
    if (!present) return w_.error(Error::ET_BAD_VALUE, cs.pos, "a required string is absent (compile spec key)");
    Vec value;
    FATPTE_RETURN_IF_ERROR(w_.vector(cs, 1, 1, value));
    if (value.start == kNone) {
      return w_.error(Error::ET_BAD_VALUE, cs.pos, "a required byte vector is absent (compile spec value)");
    }
  }
  return Status();
}

struct Header {
  bool present = false;
  std::uint64_t program_size = 0;
  std::uint64_t base = 0;
  std::uint64_t limit = 0;  // where segment data ends
};

// pte.py read_header: the extended header at byte 8 when bytes 8..12 are `eh00`.
Status read_header(Bytes payload, std::uint64_t at, const std::string& field, Header& h) {
  const std::uint8_t* p = payload.data;
  const std::uint64_t n = payload.size;
  h.program_size = n;
  if (n < 12 || std::memcmp(p + 8, "eh00", 4) != 0) return Status();
  FATPTE_CHECK(n >= 32, Error::ET_TRUNCATED, at + n, field, "the file ends at %" PRIu64 ", inside the extended header", n);
  const std::uint32_t length = detail::read_u32le(p + 12);
  const std::uint64_t program_size = detail::read_u64le(p + 16);
  const std::uint64_t base = detail::read_u64le(p + 24);
  FATPTE_CHECK(length >= 24 && length <= 4096, Error::ET_BAD_HEADER, at + 12, field,
               "header length %u is outside 24..4096", length);
  const bool full = length >= 32;
  FATPTE_CHECK(!full || n >= 40, Error::ET_TRUNCATED, at + n, field, "the file ends at %" PRIu64 ", inside the "
               "extended header", n);
  FATPTE_CHECK(program_size >= 8 + std::uint64_t{length} && program_size <= n, Error::ET_BAD_HEADER, at + 16, field,
               "program_size %" PRIu64 " is outside the file (size %" PRIu64 ") or inside the header", program_size, n);
  FATPTE_CHECK(base == 0 || (base >= program_size && base <= n), Error::ET_BAD_HEADER, at + 24, field,
               "segment_base_offset %" PRIu64 " is before the end of the program at %" PRIu64 " or past the end of "
               "the file at %" PRIu64, base, program_size, n);
  h.limit = n;
  if (full) {
    const std::uint64_t data_size = detail::read_u64le(p + 32);
    FATPTE_CHECK(data_size <= n - base, Error::ET_BAD_HEADER, at + 32, field, "segment data of %" PRIu64 " bytes "
                 "from %" PRIu64 " reaches past the end of the file at %" PRIu64, data_size, base, n);
    h.limit = base + data_size;
  }
  h = Header{true, program_size, base, h.limit};
  return Status();
}

// flatbuf.py Buffer.root: the size, the identifier at bytes 4..8, the root table.
Status read_root(Walker& w, const std::uint8_t* p, const char* identifier, Table& root) {
  if (w.size() < 8) {
    return w.error(Error::ET_TRUNCATED, 0, "%" PRId64 " bytes cannot hold a flatbuffer root offset and identifier "
                   "(8 bytes)", w.size());
  }
  if (std::memcmp(p + 4, identifier, 4) != 0) {
    return w.error(Error::ET_BAD_IDENTIFIER, 4, "bytes 4..8 are not the identifier '%s'", identifier);
  }
  std::uint64_t offset = 0;
  FATPTE_RETURN_IF_ERROR(w.u32(0, offset));
  return w.table_at(static_cast<Pos>(offset), 0, root);
}

constexpr std::uint64_t kXnnHeaderLength = 30;
constexpr std::uint64_t kNoConstantOffset = ~std::uint64_t{0};

// xnnpack.py read_header: the XH00 header, its flatbuffer and constant data inside the payload.
Status xnnpack_header(Bytes payload, std::uint64_t at, const std::string& field, std::uint64_t& fb_off,
                      std::uint64_t& fb_size, std::uint64_t& const_size) {
  const std::uint8_t* p = payload.data;
  const std::uint64_t n = payload.size;
  FATPTE_CHECK(n >= kXnnHeaderLength, Error::ET_TRUNCATED, at + n, field, "%" PRIu64 " bytes cannot hold the 30-byte "
               "XH00 header", n);
  FATPTE_CHECK(std::memcmp(p + 4, "XH00", 4) == 0, Error::ET_BAD_IDENTIFIER, at + 4, field, "bytes 4..8 are not XH00");
  const std::uint64_t length = p[8] | (std::uint64_t{p[9]} << 8);
  fb_off = detail::read_u32le(p + 10);
  fb_size = detail::read_u32le(p + 14);
  const std::uint64_t const_off = detail::read_u32le(p + 18);
  const_size = detail::read_u64le(p + 22);
  FATPTE_CHECK(length >= kXnnHeaderLength, Error::ET_BAD_HEADER, at + 8, field, "header length %" PRIu64 " is below 30",
               length);
  FATPTE_CHECK(fb_off >= length && fb_size <= n && fb_off <= n - fb_size, Error::ET_BAD_HEADER, at + 10, field,
               "flatbuffer of %" PRIu64 " bytes at %" PRIu64 " lies outside the header-free part of the payload "
               "(%" PRIu64 " bytes)", fb_size, fb_off, n);
  FATPTE_CHECK(const_off >= fb_off + fb_size && const_size <= n && const_off <= n - const_size, Error::ET_BAD_HEADER,
               at + 18, field, "constant data of %" PRIu64 " bytes at %" PRIu64 " overlaps the flatbuffer or reaches "
               "past the end of the payload (%" PRIu64 " bytes)", const_size, const_off, n);
  return Status();
}

// xnnpack.py read_xnnpack: an XH00-wrapped or bare XN01 payload, what it reads of the graph.
Status read_xnnpack(Bytes payload, std::uint64_t at, const std::string& field, std::uint64_t none_at) {
  std::uint64_t fb_off = 0, fb_size = payload.size, const_size = 0;
  const bool bare = payload.size >= 8 && std::memcmp(payload.data + 4, "XN01", 4) == 0;
  if (!bare) FATPTE_RETURN_IF_ERROR(xnnpack_header(payload, at, field, fb_off, fb_size, const_size));
  const std::uint8_t* fb = payload.data + fb_off;
  Walker w(fb, fb_size, at + fb_off, field, none_at);
  Table root;
  FATPTE_RETURN_IF_ERROR(read_root(w, fb, "XN01", root));
  std::vector<Table> list;
  FATPTE_RETURN_IF_ERROR(w.tables(root, 8, list));
  for (const Table& c : list) {
    std::uint64_t off = 0, size = 0;
    bool named = false;
    std::string key;
    FATPTE_RETURN_IF_ERROR(w.integer(c, 0, 8, off));
    FATPTE_RETURN_IF_ERROR(w.integer(c, 1, 8, size));
    FATPTE_RETURN_IF_ERROR(w.text(c, 2, named, key));
    if (off == kNoConstantOffset || !key.empty()) continue;
    if (bare || size > const_size || off > const_size - size) {
      return w.error(Error::ET_SEGMENT_OUT_OF_BOUNDS, c.pos, "constant of %" PRIu64 " bytes at %" PRIu64 " reaches "
                     "past the constant data (%" PRIu64 " bytes)", size, off, bare ? 0 : const_size);
    }
  }
  bool present = false;
  FATPTE_RETURN_IF_ERROR(w.string(root, 0, present));
  FATPTE_RETURN_IF_ERROR(w.tables(root, 1, list));
  FATPTE_RETURN_IF_ERROR(w.tables(root, 2, list));
  std::uint64_t externs = 0;
  FATPTE_RETURN_IF_ERROR(w.integer(root, 3, 4, externs));
  Vec ids;
  FATPTE_RETURN_IF_ERROR(w.vector(root, 4, 4, ids));
  return w.vector(root, 5, 4, ids);
}

// nptg.py read_nptg, as far as what it checks: each method's graph, tensor values, inputs,
// outputs, output specs, constants and mutable buffers.
class NptgReader {
 public:
  explicit NptgReader(Walker& w) : w_(w) {}

  Status method(const Table& m) {
    values_.clear();  // each method's graph names its own values (nptg.py: `values` is _method's)
    std::string name;
    FATPTE_RETURN_IF_ERROR(required_text(m, 0, name, "name"));
    Table graph;
    FATPTE_RETURN_IF_ERROR(w_.required_table(m, 1, graph));
    Vec nodes;
    FATPTE_RETURN_IF_ERROR(w_.vector(graph, 0, 4, nodes));
    if (nodes.start == kNone) return w_.error(Error::ET_BAD_VALUE, graph.pos, "the required nodes vector is absent");
    FATPTE_RETURN_IF_ERROR(w_.vector(graph, 0, 4, nodes));  // read twice, as nptg.py does
    FATPTE_RETURN_IF_ERROR(values(graph));
    std::vector<std::string> inputs, outputs;
    FATPTE_RETURN_IF_ERROR(texts(graph, 1, inputs));
    for (const std::string& n : inputs) FATPTE_RETURN_IF_ERROR(spec(graph, n));
    FATPTE_RETURN_IF_ERROR(texts(graph, 2, outputs));
    std::map<std::string, std::uint64_t> kinds;  // output spec name -> kind, the last of a name
    FATPTE_RETURN_IF_ERROR(output_specs(m, kinds));
    for (const std::string& n : outputs) {
      const auto k = kinds.find(n);
      if (k == kinds.end() || k->second == 0) FATPTE_RETURN_IF_ERROR(spec(graph, n));
    }
    FATPTE_RETURN_IF_ERROR(constants(m));
    std::vector<Table> list;
    FATPTE_RETURN_IF_ERROR(w_.tables(m, 4, list));
    for (const Table& b : list) {
      FATPTE_RETURN_IF_ERROR(required_text(b, 0, name, "name"));
      FATPTE_RETURN_IF_ERROR(required_text(b, 1, name, "fqn"));
    }
    return Status();
  }

 private:
  Status required_text(const Table& t, int slot, std::string& out, const char* what) {
    bool present = false;
    FATPTE_RETURN_IF_ERROR(w_.text(t, slot, present, out));
    return present ? Status() : w_.error(Error::ET_BAD_VALUE, t.pos, "a required string is absent (%s)", what);
  }
  Status texts(const Table& t, int slot, std::vector<std::string>& out) {
    Vec v;
    FATPTE_RETURN_IF_ERROR(w_.vector(t, slot, 4, v));
    for (std::uint64_t i = 0; i < v.count; ++i) {
      const Pos at = v.start + static_cast<Pos>(4 * i);
      std::uint64_t offset = 0;
      FATPTE_RETURN_IF_ERROR(w_.u32(at, offset));
      const Pos target = at + static_cast<Pos>(offset);
      FATPTE_RETURN_IF_ERROR(w_.string_body(target));
      out.push_back(w_.str(target));
    }
    return Status();
  }
  // _meta: the dtype a native ScalarType, then the dims' bounds.
  Status meta(const Table& meta) {
    std::uint64_t bits = 0;
    FATPTE_RETURN_IF_ERROR(w_.integer(meta, 0, 1, bits));
    if (native_dtype_name(static_cast<std::int8_t>(bits))[0] == '\0') {
      return w_.error(Error::ET_BAD_VALUE, meta.pos, "value %d is not defined by the schema's enum (dtype)",
                      static_cast<std::int8_t>(bits));
    }
    std::vector<Table> dims;
    FATPTE_RETURN_IF_ERROR(w_.tables(meta, 1, dims));
    for (const Table& d : dims) {
      FATPTE_RETURN_IF_ERROR(w_.integer(d, 0, 8, bits));
      FATPTE_RETURN_IF_ERROR(w_.integer(d, 1, 8, bits));
    }
    return Status();
  }
  // values[name] = _meta(meta): the meta first (Python evaluates an assignment's value first).
  Status values(const Table& graph) {
    std::vector<Table> list;
    FATPTE_RETURN_IF_ERROR(w_.tables(graph, 3, list));
    for (const Table& tv : list) {
      Table m;
      FATPTE_RETURN_IF_ERROR(w_.required_table(tv, 1, m));
      FATPTE_RETURN_IF_ERROR(meta(m));
      std::string name;
      FATPTE_RETURN_IF_ERROR(required_text(tv, 0, name, "name"));
      values_.insert(name);
    }
    return Status();
  }
  Status spec(const Table& graph, const std::string& name) const {
    if (values_.count(name) != 0) return Status();
    return w_.error(Error::ET_BAD_REFERENCE, graph.pos, "graph value '%s' has no tensor_values entry",
                    detail::escape_bytes(reinterpret_cast<const std::uint8_t*>(name.data()), name.size()).c_str());
  }
  Status output_specs(const Table& m, std::map<std::string, std::uint64_t>& kinds) {
    std::vector<Table> list;
    FATPTE_RETURN_IF_ERROR(w_.tables(m, 3, list));
    for (const Table& s : list) {
      std::uint64_t kind = 0;
      FATPTE_RETURN_IF_ERROR(w_.enum8(s, 1, 2, "kind", kind));
      std::string name;
      bool present = false;
      FATPTE_RETURN_IF_ERROR(required_text(s, 0, name, "name"));
      FATPTE_RETURN_IF_ERROR(w_.string(s, 2, present));
      kinds[name] = kind;
    }
    return Status();
  }
  Status constants(const Table& m) {
    std::vector<Table> list;
    FATPTE_RETURN_IF_ERROR(w_.tables(m, 2, list));
    for (const Table& c : list) {
      Table mt;
      FATPTE_RETURN_IF_ERROR(w_.required_table(c, 2, mt));
      FATPTE_RETURN_IF_ERROR(meta(mt));
      std::uint64_t kind = 0;
      FATPTE_RETURN_IF_ERROR(w_.enum8(c, 3, 3, "kind", kind));
      std::string text;
      FATPTE_RETURN_IF_ERROR(required_text(c, 0, text, "name"));
      FATPTE_RETURN_IF_ERROR(required_text(c, 1, text, "data_key"));
      FATPTE_RETURN_IF_ERROR(w_.integer(c, 4, 1, kind));
    }
    return Status();
  }

  Walker& w_;
  std::set<std::string> values_;
};

Status read_nptg(Bytes payload, std::uint64_t at, const std::string& field, std::uint64_t none_at) {
  Walker w(payload.data, payload.size, at, field, none_at);
  Table root;
  FATPTE_RETURN_IF_ERROR(read_root(w, payload.data, "NPTG", root));
  bool present = false;
  FATPTE_RETURN_IF_ERROR(w.string(root, 0, present));
  Vec methods;
  FATPTE_RETURN_IF_ERROR(w.vector(root, 1, 4, methods));
  if (methods.start == kNone) return w.error(Error::ET_BAD_VALUE, root.pos, "the required methods vector is absent");
  std::vector<Table> list;
  FATPTE_RETURN_IF_ERROR(w.tables(root, 1, list));
  NptgReader reader(w);
  for (const Table& m : list) FATPTE_RETURN_IF_ERROR(reader.method(m));
  return Status();
}

// OK when `payload` reads as Python's read_program reads it, else its first error.
Status read_program_checked(Bytes payload, std::uint64_t at, const std::string& field) {
  Header h;
  FATPTE_RETURN_IF_ERROR(read_header(payload, at, field, h));
  Walker w(payload.data, h.program_size, at, field, at);
  FATPTE_CHECK(h.program_size >= 8, Error::ET_TRUNCATED, at, field, "%" PRIu64 " bytes cannot hold a flatbuffer "
               "root offset and identifier (8 bytes)", h.program_size);
  FATPTE_CHECK(std::memcmp(payload.data + 4, "ET12", 4) == 0, Error::ET_BAD_IDENTIFIER, at + 4, field,
               "bytes 4..8 are not the ExecuTorch program (.pte) identifier 'ET12'");
  std::uint64_t root_offset = 0;
  FATPTE_RETURN_IF_ERROR(w.u32(0, root_offset));
  Table root;
  FATPTE_RETURN_IF_ERROR(w.table_at(static_cast<Pos>(root_offset), 0, root));
  ProgramReader reader(w, payload.size);
  return reader.read(root, h.present, h.base, h.limit);
}

}  // namespace

Result<et::ProgramInfo> read_program_validated(Bytes payload, std::uint64_t at, const std::string& field) {
  FATPTE_RETURN_IF_ERROR(read_program_checked(payload, at, field));
  return et::read_program(payload, at, field);
}

Status read_payload_checked(Bytes payload, std::uint64_t at, const std::string& field, std::uint64_t none_at) {
  if (payload.size < 8) return Status();
  if (std::memcmp(payload.data + 4, "NPTG", 4) == 0) return read_nptg(payload, at, field, none_at);
  if (std::memcmp(payload.data + 4, "XH00", 4) == 0 || std::memcmp(payload.data + 4, "XN01", 4) == 0) {
    return read_xnnpack(payload, at, field, none_at);
  }
  return Status();
}

}  // namespace entries
}  // namespace fatpte
