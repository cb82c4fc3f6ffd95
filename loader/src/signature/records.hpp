// The records room of signature/ (loader/layers.toml [rooms], above statement): the canonical
// records of manifest entries and named-data keys (specs/nfat-signature.md section 4), the bytes a
// statement's `record_sha256` digests, written with the one canonical-bytes writer
// (value/canonical.hpp). As fatpte/manifest/canonical.py.
#ifndef FATPTE_SRC_SIGNATURE_RECORDS_HPP_
#define FATPTE_SRC_SIGNATURE_RECORDS_HPP_

#include <cstdint>
#include <vector>

#include "nfat_manifest_generated.h"

namespace fatpte {
namespace signing {

// The entry record of a table entry whose first manifest entry of its name is `e` (nullptr: none).
std::vector<std::uint8_t> entry_record(const nfat::manifest::Entry* e);
// The named-data record of key `nd`.
std::vector<std::uint8_t> named_data_record(const nfat::manifest::NamedData* nd);

}  // namespace signing
}  // namespace fatpte

#endif  // FATPTE_SRC_SIGNATURE_RECORDS_HPP_
