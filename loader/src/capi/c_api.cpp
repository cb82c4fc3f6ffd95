// The C API: every entry point is noexcept, catches everything, and turns the C++ Status into a
// fatpte_status plus an optional fatpte_error.
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>
#include <algorithm>

#include "capi/c_handles.hpp"
#include "entries/program_record.hpp"
#include "fatpte/container.hpp"
#include "fatpte/device.hpp"
#include "fatpte/dispatch.hpp"
#include "fatpte/fatpte.h"
#include "fatpte/format.hpp"
#include "fatpte/result.hpp"
#include "fatpte/profile.hpp"
#include "fatpte/select.hpp"
#include "fatpte/self_test.hpp"
#include "fatpte/status.hpp"
#include "fatpte/tensor.hpp"

namespace {

using fatpte::Error;
using fatpte::Status;

void copy_text(char* dst, std::size_t cap, const std::string& src) noexcept {
  const std::size_t n = src.size() < cap - 1 ? src.size() : cap - 1;
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

std::string& last_message() noexcept {
  thread_local std::string message;
  return message;
}

// Every rule, as Python's fatpte.validate runs them: the container's, then each program entry
// against its record (entries/program_record.hpp), which read nothing when no entry is a program.
Status validate_all(const fatpte::Container& c) {
  Status s = c.validate();
  return s.ok() ? fatpte::check_program_entries(c) : s;
}

fatpte_status report(const Status& s, fatpte_error* error) noexcept {
  const auto code = static_cast<fatpte_status>(s.code());
  try {
    last_message() = s.ok() ? std::string() : s.describe();
  } catch (...) {
    last_message().clear();
  }
  if (error != nullptr) {
    error->code = code;
    error->offset = s.ok() ? FATPTE_NO_OFFSET : s.offset();
    error->field[0] = '\0';
    error->message[0] = '\0';
    if (!s.ok()) {
      try {
        copy_text(error->field, sizeof error->field, s.field());
        copy_text(error->message, sizeof error->message, s.describe());
      } catch (...) {
        copy_text(error->message, sizeof error->message, std::string());
      }
    }
  }
  return code;
}

// Runs `body`, turning any exception into a status: allocation failure is the only expected one.
template <typename Body>
fatpte_status guarded(fatpte_error* error, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    if (error != nullptr) {
      error->code = FATPTE_E_IO_ERROR;
      error->offset = FATPTE_NO_OFFSET;
      error->field[0] = '\0';
      copy_text(error->message, sizeof error->message, "out of memory");
    }
    return FATPTE_E_IO_ERROR;
  } catch (...) {
    return FATPTE_E_INVALID_ARGUMENT;
  }
}

const fatpte::Entry* entry_at(const fatpte_container* c, std::uint32_t index, fatpte_status* status) noexcept {
  if (c == nullptr || !c->impl) {
    *status = FATPTE_E_INVALID_ARGUMENT;
    return nullptr;
  }
  const auto& entries = c->impl->entries();
  if (index >= entries.size()) {
    *status = FATPTE_E_ENTRY_NOT_FOUND;
    return nullptr;
  }
  *status = FATPTE_OK;
  return &entries[index];
}

template <typename T, typename Get>
fatpte_status entry_query(const fatpte_container* c, std::uint32_t index, T* out, Get get) noexcept {
  if (out == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  fatpte_status status;
  const fatpte::Entry* e = entry_at(c, index, &status);
  if (e != nullptr) *out = get(*e);
  return status;
}

fatpte_status finish_open(fatpte::Result<std::unique_ptr<fatpte::Container>> r, fatpte_container** out,
                          fatpte_error* error) {
  if (!r.ok()) return report(r.error(), error);
  auto* handle = new fatpte_container();
  handle->impl = std::move(r).value();
  *out = handle;
  return report(Status(), error);
}

}  // namespace

extern "C" {

const char* fatpte_last_message(void) noexcept { return last_message().c_str(); }

const char* fatpte_status_message(fatpte_status status) noexcept {
  if (status == FATPTE_OK) return "success";
  const fatpte::ErrorInfo* info = fatpte::error_info(static_cast<Error>(status));
  return info == nullptr ? "unknown status code" : info->meaning;
}

const char* fatpte_status_tag(fatpte_status status) noexcept {
  if (status == FATPTE_OK) return "OK";
  return fatpte::error_tag(static_cast<Error>(status));
}

const char* fatpte_status_name(fatpte_status status) noexcept {
  if (status == FATPTE_OK) return "OK";
  const fatpte::ErrorInfo* info = fatpte::error_info(static_cast<Error>(status));
  return info == nullptr ? "UNKNOWN" : info->name;
}

fatpte_status fatpte_open_file(const char* path, fatpte_container** out, fatpte_error* error) noexcept {
  return guarded(error, [&]() -> fatpte_status {
    if (out != nullptr) *out = nullptr;
    if (path == nullptr || out == nullptr) {
      return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "path and out must not be NULL"),
                    error);
    }
    return finish_open(fatpte::Container::open_file(path), out, error);
  });
}

fatpte_status fatpte_open_memory(const void* data, size_t size, fatpte_container** out,
                                 fatpte_error* error) noexcept {
  return guarded(error, [&]() -> fatpte_status {
    if (out != nullptr) *out = nullptr;
    if (out == nullptr) {
      return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "out must not be NULL"), error);
    }
    return finish_open(fatpte::Container::open_memory(data, size), out, error);
  });
}

void fatpte_close(fatpte_container* container) noexcept { delete container; }

fatpte_status fatpte_validate(const fatpte_container* c, fatpte_error* error) noexcept {
  return guarded(error, [&]() -> fatpte_status {
    if (c == nullptr || !c->impl) {
      return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "container is NULL"), error);
    }
    return report(validate_all(*c->impl), error);
  });
}

fatpte_status fatpte_validate_file(const char* path, fatpte_error* error) noexcept {
  return guarded(error, [&]() -> fatpte_status {
    if (path == nullptr) {
      return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "path is NULL"), error);
    }
    auto r = fatpte::Container::open_file(path);
    if (!r.ok()) return report(r.error(), error);
    return report(validate_all(*r.value()), error);
  });
}

fatpte_status fatpte_validate_memory(const void* data, size_t size, fatpte_error* error) noexcept {
  return guarded(error, [&]() -> fatpte_status {
    if (data == nullptr && size != 0) {
      return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "data is NULL"), error);
    }
    const fatpte::Bytes buf{static_cast<const std::uint8_t*>(data), size};
    auto st = fatpte::read_structure(buf);
    if (!st.ok()) return report(st.error(), error);
    fatpte::Status s = fatpte::check_integrity(buf, st.value());
    // The program checks need an open container; one is opened only when an entry is a program.
    const auto program = [](const fatpte::Entry& e) { return std::memcmp(e.payload_kind.data(), "ET12", 4) == 0; };
    if (s.ok() && std::any_of(st.value().entries.begin(), st.value().entries.end(), program)) {
      auto c = fatpte::Container::open_memory(data, size);
      s = c.ok() ? fatpte::check_program_entries(*c.value()) : c.error();
    }
    return report(s, error);
  });
}

fatpte_status fatpte_version(const fatpte_container* c, uint32_t* out) noexcept {
  if (c == nullptr || !c->impl || out == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  *out = c->impl->version();
  return FATPTE_OK;
}

fatpte_status fatpte_entry_count(const fatpte_container* c, uint32_t* out) noexcept {
  if (c == nullptr || !c->impl || out == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  *out = static_cast<uint32_t>(c->impl->entries().size());
  return FATPTE_OK;
}

fatpte_status fatpte_find_entry(const fatpte_container* c, const char* key, uint32_t* index) noexcept {
  return guarded(nullptr, [&]() -> fatpte_status {
    if (c == nullptr || !c->impl || key == nullptr || index == nullptr) return FATPTE_E_INVALID_ARGUMENT;
    auto r = c->impl->find(key);
    if (!r.ok()) return static_cast<fatpte_status>(r.error().code());
    *index = r.value();
    return FATPTE_OK;
  });
}

fatpte_status fatpte_entry_name(const fatpte_container* c, uint32_t index, const char** out) noexcept {
  return entry_query(c, index, out, [](const fatpte::Entry& e) { return e.name.c_str(); });
}

fatpte_status fatpte_entry_backend_id(const fatpte_container* c, uint32_t index, const char** out) noexcept {
  return entry_query(c, index, out, [](const fatpte::Entry& e) { return e.backend_id.c_str(); });
}

fatpte_status fatpte_entry_offset(const fatpte_container* c, uint32_t index, uint64_t* out) noexcept {
  return entry_query(c, index, out, [](const fatpte::Entry& e) { return e.offset; });
}

fatpte_status fatpte_entry_size(const fatpte_container* c, uint32_t index, uint64_t* out) noexcept {
  return entry_query(c, index, out, [](const fatpte::Entry& e) { return e.size; });
}

fatpte_status fatpte_entry_alignment(const fatpte_container* c, uint32_t index, uint32_t* out) noexcept {
  return entry_query(c, index, out, [](const fatpte::Entry& e) { return e.alignment; });
}

fatpte_status fatpte_entry_checksum(const fatpte_container* c, uint32_t index, uint32_t* out,
                                    int* has_checksum) noexcept {
  if (has_checksum == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  const fatpte_status s = entry_query(c, index, out, [](const fatpte::Entry& e) { return e.checksum; });
  if (s == FATPTE_OK) *has_checksum = c->impl->entries()[index].has_checksum ? 1 : 0;
  return s;
}

fatpte_status fatpte_entry_priority(const fatpte_container* c, uint32_t index, int32_t* out) noexcept {
  return entry_query(c, index, out, [](const fatpte::Entry& e) { return e.priority; });
}

fatpte_status fatpte_entry_payload(const fatpte_container* c, uint32_t index, const void** data,
                                   uint64_t* size) noexcept {
  if (data == nullptr || size == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  fatpte_status status;
  const fatpte::Entry* e = entry_at(c, index, &status);
  if (e == nullptr) return status;
  *data = c->impl->bytes().data + e->offset;
  *size = e->size;
  return FATPTE_OK;
}

fatpte_status fatpte_device_host_json(char* buffer, size_t capacity, size_t* length) noexcept {
  return guarded(nullptr, [&]() -> fatpte_status {
    if (length == nullptr || (buffer == nullptr && capacity != 0)) return FATPTE_E_INVALID_ARGUMENT;
    const std::string json = fatpte::canonical_json(fatpte::probe_host());
    *length = json.size();
    if (capacity <= json.size()) return FATPTE_E_INVALID_ARGUMENT;
    std::memcpy(buffer, json.c_str(), json.size() + 1);
    return FATPTE_OK;
  });
}

namespace {

fatpte_status read_named(fatpte_container* c) {
  if (c->named_read) return FATPTE_OK;
  auto keys = fatpte::named_data_map(*c->impl);
  if (!keys.ok()) return static_cast<fatpte_status>(keys.error().code());
  c->named.assign(keys.value().begin(), keys.value().end());  // std::map: bytewise key order
  c->named_read = true;
  return FATPTE_OK;
}

}  // namespace

fatpte_status fatpte_named_data_get(const fatpte_container* c, const char* key, const void** data,
                                    uint64_t* size) noexcept {
  return guarded(nullptr, [&]() -> fatpte_status {
    if (c == nullptr || !c->impl || key == nullptr || data == nullptr || size == nullptr) {
      return FATPTE_E_INVALID_ARGUMENT;
    }
    auto* mc = const_cast<fatpte_container*>(c);  // the lazily read cache, not the container
    const fatpte_status st = read_named(mc);
    if (st != FATPTE_OK) return st;
    for (const auto& kv : mc->named) {
      if (kv.first == key) {
        *data = kv.second.data;
        *size = kv.second.size;
        return FATPTE_OK;
      }
    }
    return FATPTE_E_NAMED_DATA_NOT_FOUND;
  });
}

fatpte_status fatpte_named_data_count(const fatpte_container* c, uint32_t* out) noexcept {
  return guarded(nullptr, [&]() -> fatpte_status {
    if (c == nullptr || !c->impl || out == nullptr) return FATPTE_E_INVALID_ARGUMENT;
    auto* mc = const_cast<fatpte_container*>(c);
    const fatpte_status st = read_named(mc);
    if (st != FATPTE_OK) return st;
    *out = static_cast<uint32_t>(mc->named.size());
    return FATPTE_OK;
  });
}

fatpte_status fatpte_named_data_key(const fatpte_container* c, uint32_t index, const char** key) noexcept {
  return guarded(nullptr, [&]() -> fatpte_status {
    if (c == nullptr || !c->impl || key == nullptr) return FATPTE_E_INVALID_ARGUMENT;
    auto* mc = const_cast<fatpte_container*>(c);
    const fatpte_status st = read_named(mc);
    if (st != FATPTE_OK) return st;
    if (index >= mc->named.size()) return FATPTE_E_NAMED_DATA_NOT_FOUND;
    *key = mc->named[index].first.c_str();
    return FATPTE_OK;
  });
}

}  // extern "C": the helpers below return C++ types, which C linkage cannot (clang refuses)

namespace {

// The caller's prefer and exclude words; INVALID_ARGUMENT for a NULL list or word.
Status words(const char* const* list, size_t count, const char* field, std::vector<std::string>& out) {
  if (list == nullptr && count != 0) return fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, field, "the list is NULL");
  for (size_t i = 0; i < count; ++i) {
    if (list[i] == nullptr) return fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, field, "a word is NULL");
    out.emplace_back(list[i]);
  }
  return Status();
}

fatpte_status select_for(const fatpte_container* c, const fatpte::DeviceProfile* device, const char* const* prefer,
                         size_t prefer_count, const char* const* exclude, size_t exclude_count, fatpte_selection** out,
                         fatpte_error* error) {
  if (out != nullptr) *out = nullptr;
  if (c == nullptr || !c->impl || out == nullptr) {
    return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "a required argument is NULL"), error);
  }
  std::vector<std::string> p, x;
  Status st = words(prefer, prefer_count, "prefer", p);
  if (st.ok()) st = words(exclude, exclude_count, "exclude", x);
  if (!st.ok()) return report(st, error);
  auto handle = std::make_unique<fatpte_selection>();
  // No profile: only the facts some entry's requirements read (probe_scope), the same selection, sooner.
  handle->device = device != nullptr ? *device
                                     : fatpte::probe_host(fatpte::probe_scope(*c->impl), &handle->vendor_runtimes);
  auto s = fatpte::select(*c->impl, handle->device, p, x);
  if (!s.ok()) return report(s.error(), error);
  handle->selection = std::move(s).value();
  handle->entries = c->impl->entries();
  *out = handle.release();
  return report(Status(), error);
}

fatpte_status finish_device(fatpte::Result<fatpte::DeviceProfile> r, fatpte_device** out, fatpte_error* error) {
  if (!r.ok()) return report(r.error(), error);
  *out = new fatpte_device{std::move(r).value()};
  return report(Status(), error);
}

}  // namespace

extern "C" {

fatpte_status fatpte_device_load(const char* host_name_or_path, fatpte_device** out, fatpte_error* error) noexcept {
  return guarded(error, [&]() -> fatpte_status {
    if (out != nullptr) *out = nullptr;
    if (host_name_or_path == nullptr || out == nullptr) {
      return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "a required argument is NULL"), error);
    }
    return finish_device(fatpte::load_profile(host_name_or_path), out, error);
  });
}

fatpte_status fatpte_device_from_json(const char* json, size_t size, fatpte_device** out, fatpte_error* error) noexcept {
  return guarded(error, [&]() -> fatpte_status {
    if (out != nullptr) *out = nullptr;
    if ((json == nullptr && size != 0) || out == nullptr) {
      return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "a required argument is NULL"), error);
    }
    return finish_device(fatpte::profile_from_json(std::string(json == nullptr ? "" : json, size)), out, error);
  });
}

fatpte_status fatpte_device_json(const fatpte_device* device, char* buffer, size_t capacity, size_t* length) noexcept {
  return guarded(nullptr, [&]() -> fatpte_status {
    if (device == nullptr || length == nullptr || (buffer == nullptr && capacity != 0)) return FATPTE_E_INVALID_ARGUMENT;
    const std::string json = fatpte::canonical_json(device->profile);
    *length = json.size();
    if (capacity < json.size() + 1) return FATPTE_E_INVALID_ARGUMENT;
    std::memcpy(buffer, json.c_str(), json.size() + 1);
    return FATPTE_OK;
  });
}

void fatpte_device_free(fatpte_device* device) noexcept { delete device; }

fatpte_status fatpte_select(const fatpte_container* c, const char* device_json, const char* const* prefer,
                            size_t prefer_count, const char* const* exclude, size_t exclude_count,
                            fatpte_selection** out, fatpte_error* error) noexcept {
  return guarded(error, [&]() -> fatpte_status {
    if (device_json == nullptr) return select_for(c, nullptr, prefer, prefer_count, exclude, exclude_count, out, error);
    if (out != nullptr) *out = nullptr;
    auto d = fatpte::profile_from_json(device_json);
    if (!d.ok()) return report(d.error(), error);
    return select_for(c, &d.value(), prefer, prefer_count, exclude, exclude_count, out, error);
  });
}

fatpte_status fatpte_select_device(const fatpte_container* c, const fatpte_device* device, const char* const* prefer,
                                   size_t prefer_count, const char* const* exclude, size_t exclude_count,
                                   fatpte_selection** out, fatpte_error* error) noexcept {
  return guarded(error, [&]() -> fatpte_status {
    return select_for(c, device != nullptr ? &device->profile : nullptr, prefer, prefer_count, exclude, exclude_count,
                      out, error);
  });
}

fatpte_status fatpte_selection_chosen(const fatpte_selection* s, uint32_t* index) noexcept {
  if (s == nullptr || index == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  *index = s->selection.chosen;
  return FATPTE_OK;
}

const char* fatpte_selection_explain(const fatpte_selection* s) noexcept {
  if (s == nullptr) return "";
  try {
    std::call_once(s->explained, [s] { s->explanation = fatpte::explain(s->entries, s->selection); });
  } catch (...) {
    return "";  // out of memory while formatting: no text rather than an exception across the C API
  }
  return s->explanation.c_str();
}

void fatpte_selection_free(fatpte_selection* s) noexcept { delete s; }

fatpte_status fatpte_load_options_new(fatpte_load_options** out) noexcept {
  return guarded(nullptr, [&]() -> fatpte_status {
    if (out == nullptr) return FATPTE_E_INVALID_ARGUMENT;
    *out = new fatpte_load_options();
    return FATPTE_OK;
  });
}

void fatpte_load_options_free(fatpte_load_options* o) noexcept { delete o; }

fatpte_status fatpte_load_options_set_method(fatpte_load_options* o, const char* method) noexcept {
  return guarded(nullptr, [&]() -> fatpte_status {
    if (o == nullptr || method == nullptr || method[0] == '\0') return FATPTE_E_INVALID_ARGUMENT;
    o->options.method = method;
    return FATPTE_OK;
  });
}

fatpte_status fatpte_load_options_add_search_dir(fatpte_load_options* o, const char* dir) noexcept {
  return guarded(nullptr, [&]() -> fatpte_status {
    if (o == nullptr || dir == nullptr || dir[0] == '\0') return FATPTE_E_INVALID_ARGUMENT;
    o->options.search_path.emplace_back(dir);
    return FATPTE_OK;
  });
}

fatpte_status fatpte_load_options_set_library(fatpte_load_options* o, const char* backend_id,
                                              const char* library) noexcept {
  return guarded(nullptr, [&]() -> fatpte_status {
    if (o == nullptr || backend_id == nullptr) return FATPTE_E_INVALID_ARGUMENT;
    const fatpte::Status st =
        fatpte::set_backend_library(o->options, std::string(backend_id) + "=" + (library ? library : ""));
    return static_cast<fatpte_status>(st.code());
  });
}

fatpte_status fatpte_load_options_set_vendor_runtime(fatpte_load_options* o, const char* name,
                                                     const char* library) noexcept {
  return guarded(nullptr, [&]() -> fatpte_status {
    if (o == nullptr || name == nullptr) return FATPTE_E_INVALID_ARGUMENT;
    const fatpte::Status st =
        fatpte::set_vendor_runtime(o->options, std::string(name) + "=" + (library ? library : ""));
    return static_cast<fatpte_status>(st.code());
  });
}

fatpte_status fatpte_load_options_read_map(fatpte_load_options* o, const char* path, fatpte_error* error) noexcept {
  return guarded(error, [&]() -> fatpte_status {
    if (o == nullptr || path == nullptr) {
      return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "options and path must not be NULL"),
                    error);
    }
    return report(fatpte::read_backend_map(o->options, path), error);
  });
}

fatpte_status fatpte_load_options_set_defaults(fatpte_load_options* o, int use_build_default,
                                               int use_environment) noexcept {
  if (o == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  o->options.use_build_default = use_build_default != 0;
  o->options.use_environment = use_environment != 0;
  return FATPTE_OK;
}

fatpte_status fatpte_load_options_set_fallback(fatpte_load_options* o, int fallback) noexcept {
  if (o == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  o->options.fallback = fallback != 0;
  return FATPTE_OK;
}

fatpte_status fatpte_load_options_set_entry(fatpte_load_options* o, uint32_t index) noexcept {
  if (o == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  o->options.only_entry = index;
  return FATPTE_OK;
}

fatpte_status fatpte_load_options_set_command_line(fatpte_load_options* o, int command_line) noexcept {
  if (o == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  o->options.command_line = command_line != 0;
  return FATPTE_OK;
}

fatpte_status fatpte_load_options_set_self_test(fatpte_load_options* o, int self_test) noexcept {
  if (o == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  o->options.self_test = self_test != 0;
  return FATPTE_OK;
}

fatpte_status fatpte_load_options_set_verdicts(fatpte_load_options* o, const char* folder, const char* name) noexcept {
  if (o == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  const std::string file = name == nullptr ? "fatpte" : name;
  const bool plain = !file.empty() && file.size() <= 64 &&
                     file.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") ==
                         std::string::npos &&
                     file[0] != '.';
  if (!plain) return FATPTE_E_INVALID_ARGUMENT;
  try {
    o->options.verdicts = folder == nullptr ? "" : folder;
    o->options.verdicts_name = file;
  } catch (...) {
    return FATPTE_E_IO_ERROR;
  }
  return FATPTE_OK;
}

fatpte_status fatpte_load_options_set_receipt(fatpte_load_options* o, fatpte_receipt_callback callback, void* context,
                                              const char* container_name, int details) noexcept {
  if (o == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  try {
    o->options.receipt_name = container_name == nullptr ? "" : container_name;
    o->options.receipt_details = details != 0;
    o->options.receipt = nullptr;
    if (callback != nullptr) {
      o->options.receipt = [callback, context](const std::string& line) { callback(line.c_str(), line.size(), context); };
    }
  } catch (...) {
    return FATPTE_E_IO_ERROR;
  }
  return FATPTE_OK;
}

const char* fatpte_default_verdicts_folder(void) noexcept {
  thread_local std::string text;
  try {
    text = fatpte::default_verdicts_dir();
  } catch (...) {
    text.clear();
  }
  return text.c_str();
}

fatpte_status fatpte_load_with(const fatpte_container* c, const fatpte_selection* s, const fatpte_load_options* o,
                               fatpte_loaded** out, fatpte_error* error) noexcept {
  return guarded(error, [&]() -> fatpte_status {
    if (out != nullptr) *out = nullptr;
    if (c == nullptr || !c->impl || s == nullptr || out == nullptr) {
      return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "a required argument is NULL"),
                    error);
    }
    const fatpte::LoadOptions defaults;
    auto r = fatpte::load(*c->impl, s->selection, s->device, o != nullptr ? o->options : defaults, s->vendor_runtimes);
    if (!r.ok()) return report(r.error(), error);
    auto handle = std::make_unique<fatpte_loaded>();
    handle->dispatch = std::move(r).value();
    handle->dispatch.selection = s->selection;
    handle->explanation = fatpte::explain_dispatch(*c->impl, handle->dispatch);
    fatpte::capi::serve(*c->impl, s->device, o != nullptr ? o->options : defaults, *handle);
    *out = handle.release();
    return report(Status(), error);
  });
}

fatpte_status fatpte_load_for(const fatpte_container* c, const fatpte_device* device, const char* const* prefer,
                              size_t prefer_count, const char* const* exclude, size_t exclude_count,
                              const fatpte_load_options* o, fatpte_loaded** out, fatpte_load_report** report_out,
                              fatpte_error* error) noexcept {
  return guarded(error, [&]() -> fatpte_status {
    if (out != nullptr) *out = nullptr;
    if (report_out != nullptr) *report_out = nullptr;
    if (c == nullptr || !c->impl || out == nullptr) {
      return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "a required argument is NULL"),
                    error);
    }
    fatpte::Choice choice;
    if (device != nullptr) choice.device = device->profile;
    Status st = words(prefer, prefer_count, "prefer", choice.prefer);
    if (st.ok()) st = words(exclude, exclude_count, "exclude", choice.exclude);
    if (!st.ok()) return report(st, error);
    const fatpte::LoadOptions defaults;
    auto handle = std::make_unique<fatpte_loaded>();
    st = fatpte::load(*c->impl, choice, o != nullptr ? o->options : defaults, handle->dispatch);
    const fatpte::Dispatch& d = handle->dispatch;
    const std::string dispatch = fatpte::explain_dispatch(*c->impl, d);
    if (report_out != nullptr) {
      auto r = std::make_unique<fatpte_load_report>();
      if (d.selection) r->selection = fatpte::explain(*c->impl, *d.selection);
      r->dispatch = dispatch;
      r->key_id = d.signature_key_id;
      r->vendor_runtimes = fatpte::vendor_runtimes_json(d, o != nullptr ? o->options : defaults);
      for (const fatpte::Attempt& a : d.attempts) r->attempts.emplace_back(a.index, a.outcome);
      *report_out = r.release();
    }
    if (!st.ok()) return report(st, error);
    handle->explanation = dispatch;
    fatpte::capi::serve(*c->impl, choice.device, o != nullptr ? o->options : defaults, *handle);
    *out = handle.release();
    return report(Status(), error);
  });
}

const char* fatpte_load_report_selection(const fatpte_load_report* r) noexcept { return r == nullptr ? "" : r->selection.c_str(); }

const char* fatpte_load_report_dispatch(const fatpte_load_report* r) noexcept { return r == nullptr ? "" : r->dispatch.c_str(); }

const char* fatpte_load_report_vendor_runtimes(const fatpte_load_report* r) noexcept {
  return r == nullptr ? "[]" : r->vendor_runtimes.c_str();
}

const char* fatpte_load_report_key_id(const fatpte_load_report* r) noexcept { return r == nullptr ? "" : r->key_id.c_str(); }

fatpte_status fatpte_load_report_attempt_count(const fatpte_load_report* r, size_t* count) noexcept {
  if (r == nullptr || count == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  *count = r->attempts.size();
  return FATPTE_OK;
}

fatpte_status fatpte_load_report_attempt(const fatpte_load_report* r, size_t i, uint32_t* index,
                                         const char** outcome) noexcept {
  if (r == nullptr || index == nullptr || outcome == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  if (i >= r->attempts.size()) return FATPTE_E_ENTRY_NOT_FOUND;
  *index = r->attempts[i].first;
  *outcome = r->attempts[i].second.c_str();
  return FATPTE_OK;
}

void fatpte_load_report_free(fatpte_load_report* r) noexcept { delete r; }

fatpte_status fatpte_load(const fatpte_container* c, const fatpte_selection* s, const char* const* dirs,
                          size_t dir_count, fatpte_loaded** out, fatpte_error* error) noexcept {
  return guarded(error, [&]() -> fatpte_status {
    if (out != nullptr) *out = nullptr;
    if (dirs == nullptr && dir_count != 0) {
      return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "dirs is NULL"), error);
    }
    fatpte_load_options o;
    for (size_t i = 0; i < dir_count; ++i) {
      if (dirs[i] != nullptr) o.options.search_path.emplace_back(dirs[i]);
    }
    return fatpte_load_with(c, s, &o, out, error);
  });
}

fatpte_status fatpte_loaded_entry(const fatpte_loaded* l, uint32_t* index) noexcept {
  if (l == nullptr || !l->dispatch.loaded || index == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  *index = l->dispatch.loaded->index();
  return FATPTE_OK;
}

const char* fatpte_loaded_method(const fatpte_loaded* l) noexcept {
  return l == nullptr || !l->dispatch.loaded ? "" : l->dispatch.loaded->method().c_str();
}

const char* fatpte_loaded_grade(const fatpte_loaded* l, uint32_t entry) noexcept {
  if (l == nullptr || !l->dispatch.selection) return "";
  for (const fatpte::Verdict& v : l->dispatch.selection->verdicts) {
    if (v.index == entry) return v.grade.c_str();
  }
  return "";
}

const char* fatpte_loaded_explain(const fatpte_loaded* l) noexcept { return l == nullptr ? "" : l->explanation.c_str(); }

const char* fatpte_dtype_name(int32_t dtype) noexcept {
  return fatpte::is_dtype(dtype) ? fatpte::dtype_name(static_cast<fatpte::DType>(dtype)) : nullptr;
}

fatpte_status fatpte_execute(fatpte_loaded* l, const fatpte_tensor* inputs, size_t input_count,
                             fatpte_error* error) noexcept {
  return guarded(error, [&]() -> fatpte_status {
    if (l == nullptr || (!l->dispatch.loaded && !l->serving) || (inputs == nullptr && input_count != 0)) {
      return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "a required argument is NULL"),
                    error);
    }
    std::vector<fatpte::Tensor> in(input_count);
    for (size_t i = 0; i < input_count; ++i) {
      const fatpte_tensor& t = inputs[i];
      const std::string field = "inputs[" + std::to_string(i) + "]";
      if (!fatpte::is_dtype(t.dtype) || (t.rank != 0 && t.shape == nullptr) || (t.data == nullptr && t.nbytes != 0)) {
        return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, field,
                                   "input %zu: dtype %d is no dtype, or its shape or data is NULL", i, t.dtype),
                      error);
      }
      in[i].dtype = static_cast<fatpte::DType>(t.dtype);
      in[i].shape.assign(t.shape, t.shape + t.rank);
      const std::uint64_t numel = in[i].numel();
      const std::uint64_t element = fatpte::element_size(in[i].dtype);
      const bool countable = numel != fatpte::kNoCount && numel <= fatpte::kNoCount / element;
      const std::uint64_t want = countable ? numel * element : fatpte::kNoCount;
      if (!countable || want != t.nbytes) {
        return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, field,
                                   "input %zu: %llu bytes given, its dtype and shape need %llu", i,
                                   static_cast<unsigned long long>(t.nbytes), static_cast<unsigned long long>(want)),
                      error);
      }
      const auto* bytes = static_cast<const std::uint8_t*>(t.data);
      in[i].data.assign(bytes, bytes + t.nbytes);
    }
    l->outputs.clear();
    auto r = fatpte::capi::serve_call(*l, in);
    if (!r.ok()) return report(r.error(), error);
    l->outputs = std::move(r).value();
    return report(Status(), error);
  });
}

fatpte_status fatpte_output_count(const fatpte_loaded* l, size_t* count) noexcept {
  if (l == nullptr || count == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  *count = l->outputs.size();
  return FATPTE_OK;
}

fatpte_status fatpte_output(const fatpte_loaded* l, size_t index, fatpte_tensor* out) noexcept {
  if (l == nullptr || out == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  if (index >= l->outputs.size()) return FATPTE_E_ENTRY_NOT_FOUND;
  const fatpte::Tensor& t = l->outputs[index];
  out->dtype = t.none ? FATPTE_DTYPE_NONE : static_cast<int32_t>(t.dtype);
  out->rank = static_cast<uint32_t>(t.none ? 0 : t.shape.size());
  out->shape = t.shape.data();
  out->data = t.data.data();
  out->nbytes = t.none ? 0 : t.data.size();
  return FATPTE_OK;
}

fatpte_status fatpte_run_f32(fatpte_loaded* l, const float* input, size_t input_count, float* output,
                             size_t output_capacity, size_t* output_count, fatpte_error* error) noexcept {
  return guarded(error, [&]() -> fatpte_status {
    if (l == nullptr || !l->dispatch.loaded || (input == nullptr && input_count != 0) ||
        (output == nullptr && output_capacity != 0) || output_count == nullptr) {
      return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "a required argument is NULL"),
                    error);
    }
    const int64_t shape[1] = {static_cast<int64_t>(input_count)};
    const fatpte_tensor in{FATPTE_DTYPE_FLOAT32, 1, shape, input, input_count * sizeof(float)};
    const fatpte_status st = fatpte_execute(l, &in, 1, error);
    if (st != FATPTE_OK) return st;
    if (l->outputs.empty() || l->outputs[0].none || l->outputs[0].dtype != fatpte::DType::kFloat32) {
      return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "outputs[0]",
                                 "the method's first output is not a float32 tensor"),
                    error);
    }
    const fatpte::Tensor& t = l->outputs[0];
    const size_t count = t.data.size() / sizeof(float);
    if (count > output_capacity) {
      return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "outputs[0]",
                                 "the output holds %zu floats, more than the capacity of %zu", count,
                                 output_capacity),
                    error);
    }
    if (count != 0) std::memcpy(output, t.data.data(), count * sizeof(float));
    *output_count = count;
    return report(Status(), error);
  });
}

void fatpte_unload(fatpte_loaded* l) noexcept { delete l; }

fatpte_status fatpte_self_test(const fatpte_container* c, fatpte_loaded* l, int keep_outputs,
                               fatpte_self_test_report** out, fatpte_error* error) noexcept {
  return guarded(error, [&]() -> fatpte_status {
    if (out != nullptr) *out = nullptr;
    if (c == nullptr || !c->impl || l == nullptr || !l->dispatch.loaded || out == nullptr) {
      return report(fatpte::fail(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "a required argument is NULL"),
                    error);
    }
    fatpte::SelfTestOptions options;
    options.keep_outputs = keep_outputs != 0;
    options.signature = l->dispatch.signature.get();  // a signed load: only signed golden calls, hashed
    auto r = fatpte::self_test(*c->impl, *l->dispatch.loaded, options);
    if (!r.ok()) return report(r.error(), error);
    auto handle = std::make_unique<fatpte_self_test_report>();
    handle->report = std::move(r).value();
    handle->summary = handle->report.summary();
    handle->json = handle->report.json(*c->impl);
    const bool passed = handle->report.passed;
    const std::string summary = handle->summary;
    *out = handle.release();
    if (passed) return report(Status(), error);
    return report(fatpte::fail(Error::GOLDEN_MISMATCH, fatpte::kNoOffset, "", "%s", summary.c_str()), error);
  });
}

const char* fatpte_self_test_report_summary(const fatpte_self_test_report* r) noexcept {
  return r == nullptr ? "" : r->summary.c_str();
}

const char* fatpte_self_test_report_json(const fatpte_self_test_report* r) noexcept {
  return r == nullptr ? "" : r->json.c_str();
}

fatpte_status fatpte_self_test_report_call_count(const fatpte_self_test_report* r, size_t* count) noexcept {
  if (r == nullptr || count == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  *count = r->report.calls.size();
  return FATPTE_OK;
}

fatpte_status fatpte_self_test_report_output(const fatpte_self_test_report* r, size_t call, size_t output,
                                            fatpte_tensor* out) noexcept {
  if (r == nullptr || out == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  if (call >= r->report.calls.size() || output >= r->report.calls[call].got.size()) return FATPTE_E_ENTRY_NOT_FOUND;
  const fatpte::Tensor& t = r->report.calls[call].got[output];
  out->dtype = t.none ? FATPTE_DTYPE_NONE : static_cast<int32_t>(t.dtype);
  out->rank = static_cast<uint32_t>(t.none ? 0 : t.shape.size());
  out->shape = t.shape.data();
  out->data = t.data.data();
  out->nbytes = t.none ? 0 : t.data.size();
  return FATPTE_OK;
}

void fatpte_self_test_report_free(fatpte_self_test_report* r) noexcept { delete r; }

}  // extern "C"

// For the C API defined in other files (capi/signature_c_api.cpp), declared in capi/c_handles.hpp.
namespace fatpte {
namespace capi {

const Container* container_of(const fatpte_container* c) noexcept { return c == nullptr ? nullptr : c->impl.get(); }

fatpte_status to_status(const Status& s, fatpte_error* error) noexcept { return report(s, error); }

}  // namespace capi
}  // namespace fatpte
