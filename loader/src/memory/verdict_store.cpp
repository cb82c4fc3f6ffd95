// The verdict store's format (see verdict_store.hpp, specs/verdicts.md).
#include "memory/verdict_store.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string_view>
#include <utility>

#include "common/json.hpp"
#include "common/output_file.hpp"
#include "common/text.hpp"
#include "fatpte/text.hpp"

namespace fatpte {
namespace memory {

namespace {

using detail::json_text;

constexpr std::string_view kFormat = "fatpte-verdicts";
constexpr const char* kRecordKeys[] = {"container", "entry", "name", "method", "device",
                                       "libraries", "verdict", "reason", "time"};

Status refuse(const std::string& source, const json::Value& v, const std::string& field, const std::string& rule) {
  return fail(Error::INVALID_ARGUMENT, v ? v.offset() : kNoOffset, field,
              "verdict store %s: %s %s; the store is not used (delete it, or `fatpte verdicts clear`, to start "
              "a new one)",
              source.c_str(), field.c_str(), rule.c_str());
}

bool is_digest(std::string_view s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// Only the members `allowed`, each at most once (the parser refuses duplicates).
Status only_keys(const std::string& source, const json::Value& object, const std::string& field,
                 const char* const* allowed, std::size_t count) {
  for (const json::Value::Member m : object.members()) {
    if (std::find_if(allowed, allowed + count, [&](const char* k) { return m.key == k; }) == allowed + count) {
      return refuse(source, m.value, field + (field.empty() ? "" : ".") + std::string(m.key),
                    "is not a member of this version of the store");
    }
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (!object.find(allowed[i])) return refuse(source, object, field + (field.empty() ? "" : ".") + allowed[i], "is missing");
  }
  return Status();
}

Result<std::string> text_of(const std::string& source, const json::Value& v, const std::string& field) {
  if (!v.is(json::Kind::kString)) return refuse(source, v, field, "must be a string");
  if (v.text().size() > kMaxText) return refuse(source, v, field, "is longer than " + std::to_string(kMaxText) + " bytes");
  return std::string(v.text());
}

Result<std::uint64_t> integer_of(const std::string& source, const json::Value& v, const std::string& field,
                                 std::uint64_t max) {
  bool negative = false;
  std::uint64_t magnitude = 0;
  if (!v.is(json::Kind::kNumber) || !json::integer(v, negative, magnitude) || (negative && magnitude != 0) ||
      magnitude > max) {
    return refuse(source, v, field, "must be an integer from 0 to " + std::to_string(max));
  }
  return magnitude;
}

Result<VerdictRecord> record_of(const std::string& source, const json::Value& v, const std::string& at) {
  if (!v.is(json::Kind::kObject)) return refuse(source, v, at, "must be an object");
  FATPTE_RETURN_IF_ERROR(only_keys(source, v, at, kRecordKeys, std::size(kRecordKeys)));
  VerdictRecord r;
  for (const char* digest : {"container", "device"}) {
    auto text = text_of(source, v.find(digest), at + "." + digest);
    if (!text.ok()) return text.error();
    if (!is_digest(text.value())) return refuse(source, v.find(digest), at + "." + digest, "must be 64 lowercase hex digits");
    (digest[0] == 'c' ? r.key.container : r.key.device) = text.value();
  }
  auto entry = integer_of(source, v.find("entry"), at + ".entry", 0xFFFFFFFFu);
  if (!entry.ok()) return entry.error();
  r.key.entry = static_cast<std::uint32_t>(entry.value());
  for (auto [name, into] : {std::pair<const char*, std::string*>{"name", &r.key.name}, {"method", &r.key.method},
                            {"verdict", &r.verdict}, {"reason", &r.reason}}) {
    auto text = text_of(source, v.find(name), at + "." + name);
    if (!text.ok()) return text.error();
    *into = text.value();
  }
  if (r.verdict != "pass" && r.verdict != "fail" && r.verdict != "crash" && r.verdict != "loaded" &&
      r.verdict != "skipped" && r.verdict != "attempt") {
    return refuse(source, v.find("verdict"), at + ".verdict",
                  "must be \"pass\", \"fail\", \"crash\", \"loaded\", \"skipped\" or \"attempt\"");
  }
  const json::Value libs = v.find("libraries");
  if (!libs.is(json::Kind::kArray) || libs.size() > kMaxLibraries) {
    return refuse(source, libs, at + ".libraries", "must be a list of at most " + std::to_string(kMaxLibraries) + " strings");
  }
  std::size_t i = 0;
  for (const json::Value lib : libs.items()) {
    auto text = text_of(source, lib, at + ".libraries[" + std::to_string(i++) + "]");
    if (!text.ok()) return text.error();
    r.key.libraries.push_back(text.value());
  }
  if (!std::is_sorted(r.key.libraries.begin(), r.key.libraries.end())) {
    return refuse(source, libs, at + ".libraries", "must be sorted");
  }
  auto time = integer_of(source, v.find("time"), at + ".time", (std::uint64_t{1} << 63) - 1);
  if (!time.ok()) return time.error();
  r.time = time.value();
  return r;
}

void append_record(std::string& out, const VerdictRecord& r) {
  out += "{\"container\": \"" + r.key.container + "\", \"entry\": " + std::to_string(r.key.entry) +
         ", \"name\": " + json_text(r.key.name) + ", \"method\": " + json_text(r.key.method) +
         ", \"device\": \"" + r.key.device + "\", \"libraries\": [";
  for (std::size_t i = 0; i < r.key.libraries.size(); ++i) {
    out += (i ? ", " : "") + json_text(r.key.libraries[i]);
  }
  out += "], \"verdict\": " + json_text(r.verdict) + ", \"reason\": " + json_text(r.reason) +
         ", \"time\": " + std::to_string(r.time) + "}";
}

}  // namespace

Result<VerdictStore> parse_store(const std::string& text, const std::string& source) {
  json::Options rules;
  rules.max_bytes = kMaxStoreBytes;
  rules.utf8 = true;
  rules.max_depth = 8;
  auto doc = json::parse(text, rules);
  if (!doc.ok()) {
    return fail(Error::INVALID_ARGUMENT, doc.error().offset(), "",
                "verdict store %s is not valid JSON: %s; the store is not used (delete it, or `fatpte verdicts "
                "clear`, to start a new one)",
                source.c_str(), doc.error().message().c_str());
  }
  const json::Value root = doc.value().root();
  if (!root.is(json::Kind::kObject)) return refuse(source, root, "$", "must be an object");
  const json::Value format = root.find("format");
  if (!format.is(json::Kind::kString) || format.text() != kFormat) {
    return refuse(source, format, "format", "must be \"fatpte-verdicts\"");
  }
  const json::Value version = root.find("version");
  auto number = integer_of(source, version, "version", 0xFFFFFFFFu);
  if (!number.ok()) return number.error();
  if (number.value() != kStoreVersion) {
    return refuse(source, version, "version",
                  "is " + std::to_string(number.value()) + ": this fatpte reads version 1 only (a newer fatpte wrote "
                  "it; it is neither used nor overwritten)");
  }
  static const char* const kRootKeys[] = {"format", "version", "records"};
  FATPTE_RETURN_IF_ERROR(only_keys(source, root, "", kRootKeys, std::size(kRootKeys)));
  const json::Value records = root.find("records");
  if (!records.is(json::Kind::kArray) || records.size() > kMaxRecords) {
    return refuse(source, records, "records", "must be a list of at most " + std::to_string(kMaxRecords) + " records");
  }
  VerdictStore store;
  for (const json::Value item : records.items()) {
    const std::string at = "records[" + std::to_string(store.records.size()) + "]";
    auto r = record_of(source, item, at);
    if (!r.ok()) return r.error();
    if (find(store, r.value().key) != nullptr) return refuse(source, item, at, "has the key of an earlier record");
    store.records.push_back(std::move(r).value());
  }
  return store;
}

Result<VerdictStore> read_store(const std::string& path) {
  struct stat sb;
  if (::stat(path.c_str(), &sb) != 0 && errno == ENOENT) return VerdictStore{};
  auto text = json::read_file(path, kMaxStoreBytes, "the verdict store");
  if (!text.ok()) return text.error();
  return parse_store(text.value(), path);
}

std::string store_text(const VerdictStore& store) {
  std::string out = "{\"format\": \"fatpte-verdicts\", \"version\": 1, \"records\": [";
  for (std::size_t i = 0; i < store.records.size(); ++i) {
    out += i ? ",\n  " : "\n  ";
    append_record(out, store.records[i]);
  }
  out += store.records.empty() ? "]}\n" : "\n]}\n";
  return out;
}

Status write_store(const std::string& path, const VerdictStore& store) {
  const std::string text = store_text(store);
  return write_output_file(path, reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), true);
}

const VerdictRecord* find(const VerdictStore& store, const VerdictKey& key) {
  for (const VerdictRecord& r : store.records) {
    if (r.key == key) return &r;
  }
  return nullptr;
}

void put(VerdictStore& store, VerdictRecord record) {
  erase(store, record.key);
  if (store.records.size() >= kMaxRecords) {
    auto oldest = std::min_element(store.records.begin(), store.records.end(),
                                   [](const VerdictRecord& a, const VerdictRecord& b) { return a.time < b.time; });
    store.records.erase(oldest);
  }
  store.records.push_back(std::move(record));
}

bool erase(VerdictStore& store, const VerdictKey& key) {
  auto it = std::find_if(store.records.begin(), store.records.end(), [&](const VerdictRecord& r) { return r.key == key; });
  if (it == store.records.end()) return false;
  store.records.erase(it);
  return true;
}

}  // namespace memory
}  // namespace fatpte
