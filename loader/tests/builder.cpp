// Test-only container writer (see builder.hpp).
#include "builder.hpp"

#include <cstring>

#include "fatpte/fatpte.hpp"
#include "nfat_manifest_generated.h"

namespace fatpte {
namespace testing {

namespace F = format;

void put_u32le(std::vector<std::uint8_t>& buf, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) buf[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

void put_u64le(std::vector<std::uint8_t>& buf, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) buf[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

std::size_t entry_field(std::uint32_t index, std::uint32_t field_offset) {
  return F::kV2HeaderSize + std::size_t{index} * F::kV2EntrySize + field_offset;
}

void reseal(std::vector<std::uint8_t>& buf) {
  std::uint64_t table_end = F::kV2HeaderSize;
  std::uint32_t hs = 0, es = 0, n = 0, ss = 0, sn = 0;
  std::memcpy(&hs, &buf[F::kV2Header_header_size_offset], 4);  // tests run on little-endian hosts
  std::memcpy(&es, &buf[F::kV2Header_entry_size_offset], 4);
  std::memcpy(&n, &buf[F::kV2Header_entry_count_offset], 4);
  std::memcpy(&ss, &buf[F::kV2Header_segment_entry_size_offset], 4);
  std::memcpy(&sn, &buf[F::kV2Header_segment_count_offset], 4);
  table_end = std::uint64_t{hs} + std::uint64_t{es} * n + std::uint64_t{ss} * sn;
  if (table_end > buf.size()) table_end = buf.size();
  const std::uint8_t zero[4] = {0, 0, 0, 0};
  std::uint32_t c = crc32c(buf.data(), F::kHeaderChecksumOffset);
  c = crc32c(zero, 4, c);
  c = crc32c(buf.data() + F::kHeaderChecksumOffset + 4, table_end - F::kHeaderChecksumOffset - 4, c);
  put_u32le(buf, F::kV2Header_header_checksum_offset, c);
}

// The entry table and the payloads of `specs`, each payload at its offset.
void write_entries(std::vector<std::uint8_t>& buf, const std::vector<Spec>& specs,
                   const std::vector<std::uint64_t>& offsets) {
  for (std::uint32_t i = 0; i < specs.size(); ++i) {
    const Spec& s = specs[i];
    std::memcpy(&buf[entry_field(i, F::kV2Entry_name_offset)], s.name.data(), s.name.size());
    std::memcpy(&buf[entry_field(i, F::kV2Entry_backend_id_offset)], s.backend_id.data(), s.backend_id.size());
    put_u64le(buf, entry_field(i, F::kV2Entry_offset_offset), offsets[i]);
    put_u64le(buf, entry_field(i, F::kV2Entry_size_offset), s.payload.size());
    put_u32le(buf, entry_field(i, F::kV2Entry_alignment_offset), s.alignment);
    put_u32le(buf, entry_field(i, F::kV2Entry_checksum_offset), crc32c(s.payload.data(), s.payload.size()));
    put_u32le(buf, entry_field(i, F::kV2Entry_priority_offset), static_cast<std::uint32_t>(s.priority));
    if (!s.payload.empty()) std::memcpy(&buf[offsets[i]], s.payload.data(), s.payload.size());
  }
}

std::vector<std::uint8_t> build_v2(const std::vector<Spec>& specs) {
  const auto count = static_cast<std::uint32_t>(specs.size());
  std::uint64_t pos = F::kV2HeaderSize + std::uint64_t{F::kV2EntrySize} * count;
  std::vector<std::uint64_t> offsets;
  for (const Spec& s : specs) {
    pos = (pos + s.alignment - 1) / s.alignment * s.alignment;
    offsets.push_back(pos);
    pos += s.payload.size();
  }
  std::vector<std::uint8_t> buf(pos, 0);
  std::memcpy(&buf[0], F::kMagic, F::kMagicSize);
  put_u32le(buf, F::kV2Header_version_offset, F::kVersion2);
  put_u32le(buf, F::kV2Header_header_size_offset, F::kV2HeaderSize);
  put_u32le(buf, F::kV2Header_entry_size_offset, F::kV2EntrySize);
  put_u32le(buf, F::kV2Header_entry_count_offset, count);
  put_u32le(buf, F::kV2Header_segment_entry_size_offset, F::kV2SegmentSize);
  put_u64le(buf, F::kV2Header_container_size_offset, pos);
  write_entries(buf, specs, offsets);
  reseal(buf);
  return buf;
}

std::vector<std::uint8_t> build_v2_named(const std::vector<Spec>& specs,
                                         const std::vector<std::pair<std::string, std::vector<std::uint8_t>>>& named) {
  return build_v2_named(specs, named, {});
}

std::vector<std::uint8_t> build_v2_named(const std::vector<Spec>& specs,
                                         const std::vector<std::pair<std::string, std::vector<std::uint8_t>>>& named,
                                         const std::map<std::string, Layout>& layouts) {
  namespace M = nfat::manifest;
  ::flatbuffers::FlatBufferBuilder fbb;
  std::vector<::flatbuffers::Offset<M::Entry>> entries;
  for (const Spec& s : specs) {
    std::vector<::flatbuffers::Offset<::flatbuffers::String>> keys;
    for (const auto& kv : named) keys.push_back(fbb.CreateString(kv.first));
    entries.push_back(M::CreateEntryDirect(fbb, s.name.c_str(), 0, 0, &keys));
  }
  std::vector<::flatbuffers::Offset<M::NamedData>> nd;
  for (std::uint32_t i = 0; i < named.size(); ++i) {
    auto it = layouts.find(named[i].first);
    ::flatbuffers::Offset<M::TensorLayout> layout = 0;
    if (it != layouts.end()) {
      layout = M::CreateTensorLayoutDirect(fbb, it->second.dtype.c_str(), &it->second.sizes,
                                           it->second.dim_order.empty() ? nullptr : &it->second.dim_order);
    }
    nd.push_back(M::CreateNamedDataDirect(fbb, named[i].first.c_str(), i, layout));
  }
  M::FinishManifestBuffer(fbb, M::CreateManifestDirect(fbb, layouts.empty() ? 1 : 2, &entries, &nd));
  const std::vector<std::uint8_t> manifest(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  return build_v2_manifest(specs, named, manifest);
}

std::vector<std::uint8_t> build_v2_manifest(const std::vector<Spec>& specs,
                                            const std::vector<std::pair<std::string, std::vector<std::uint8_t>>>& named,
                                            const std::vector<std::uint8_t>& manifest) {
  const auto count = static_cast<std::uint32_t>(specs.size());
  const auto segs = static_cast<std::uint32_t>(named.size());
  auto align = [](std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; };
  std::uint64_t pos = F::kV2HeaderSize + std::uint64_t{F::kV2EntrySize} * count + std::uint64_t{F::kV2SegmentSize} * segs;
  std::vector<std::uint64_t> offsets, seg_offsets;
  for (const Spec& s : specs) {
    pos = align(pos, s.alignment);
    offsets.push_back(pos);
    pos += s.payload.size();
  }
  for (const auto& kv : named) {
    pos = align(pos, 64);
    seg_offsets.push_back(pos);
    pos += kv.second.size();
  }
  pos = align(pos, F::kManifestAlignment);
  const std::uint64_t manifest_at = pos;
  pos += manifest.size();
  std::vector<std::uint8_t> buf(pos, 0);
  std::memcpy(&buf[0], F::kMagic, F::kMagicSize);
  put_u32le(buf, F::kV2Header_version_offset, F::kVersion2);
  put_u32le(buf, F::kV2Header_header_size_offset, F::kV2HeaderSize);
  put_u32le(buf, F::kV2Header_entry_size_offset, F::kV2EntrySize);
  put_u32le(buf, F::kV2Header_entry_count_offset, count);
  put_u32le(buf, F::kV2Header_segment_entry_size_offset, F::kV2SegmentSize);
  put_u32le(buf, F::kV2Header_segment_count_offset, segs);
  put_u64le(buf, F::kV2Header_container_size_offset, pos);
  put_u64le(buf, F::kV2Header_manifest_offset_offset, manifest_at);
  put_u64le(buf, F::kV2Header_manifest_size_offset, manifest.size());
  put_u32le(buf, F::kV2Header_manifest_checksum_offset, crc32c(manifest.data(), manifest.size()));
  std::memcpy(&buf[manifest_at], manifest.data(), manifest.size());
  write_entries(buf, specs, offsets);
  const std::size_t seg_table = F::kV2HeaderSize + std::size_t{F::kV2EntrySize} * count;
  for (std::uint32_t i = 0; i < segs; ++i) {
    const std::size_t base = seg_table + std::size_t{i} * F::kV2SegmentSize;
    const auto& data = named[i].second;
    put_u64le(buf, base + F::kV2Segment_offset_offset, seg_offsets[i]);
    put_u64le(buf, base + F::kV2Segment_size_offset, data.size());
    put_u32le(buf, base + F::kV2Segment_alignment_offset, 64);
    put_u32le(buf, base + F::kV2Segment_checksum_offset, crc32c(data.data(), data.size()));
    if (!data.empty()) std::memcpy(&buf[seg_offsets[i]], data.data(), data.size());
  }
  reseal(buf);
  return buf;
}

std::vector<std::uint8_t> build_v1(const std::vector<Spec>& specs) {
  const auto count = static_cast<std::uint32_t>(specs.size());
  const std::size_t data_start = F::kV1HeaderSize + std::size_t{F::kV1EntrySize} * count;
  std::vector<std::uint8_t> buf(data_start, 0);
  std::memcpy(&buf[0], F::kMagic, F::kMagicSize);
  put_u32le(buf, F::kV1Header_version_offset, F::kVersion1);
  put_u32le(buf, F::kV1Header_entry_count_offset, count);
  std::uint64_t rel = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::size_t base = F::kV1HeaderSize + std::size_t{i} * F::kV1EntrySize;
    std::memcpy(&buf[base], specs[i].backend_id.data(), specs[i].backend_id.size());
    put_u64le(buf, base + F::kV1Entry_offset_offset, rel);
    put_u64le(buf, base + F::kV1Entry_size_offset, specs[i].payload.size());
    rel += specs[i].payload.size();
  }
  for (const Spec& s : specs) buf.insert(buf.end(), s.payload.begin(), s.payload.end());
  return buf;
}

}  // namespace testing
}  // namespace fatpte
