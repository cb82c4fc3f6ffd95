// The statement room of signature/ (loader/layers.toml [rooms], above bundle): the in-toto
// statement a verified envelope carries (specs/nfat-signature.md section 3.2), read in section 6
// step 5's order with every field's shape checked. As fatpte/ops/signing/statement.py's reader.
#ifndef FATPTE_SRC_SIGNATURE_STATEMENT_HPP_
#define FATPTE_SRC_SIGNATURE_STATEMENT_HPP_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "device/requirements.hpp"
#include "fatpte/signature.hpp"
#include "signature/bundle.hpp"

namespace fatpte {
namespace signing {

// What the statement says of one entry.
struct SignedEntry {
  std::string name, backend_id;
  std::array<std::uint8_t, 4> payload_kind{};
  std::int64_t priority = 0, alignment = 0;
  Digest payload{}, record{};
  // What selection reads of its record (revision 2, section 3.2); absent in a revision 1 statement.
  std::optional<detail::Requirements> selection;
  // The golden digest of its golden calls (revision 3, section 3.2); absent before revision 3.
  std::optional<Digest> golden;
};
// What the statement says of one named-data key.
struct SignedKey {
  std::string key;
  Digest digest{}, record{};
};
struct Statement {
  std::vector<SignedEntry> entries;
  std::vector<SignedKey> keys;
};

// Step 5: the statement, the envelope's decoded `payload`, read into `st`. `json_bytes` becomes
// the larger of itself and the memory the parsed statement held.
Status read_statement(const Where& w, const std::vector<std::uint8_t>& payload, Statement& st,
                      std::uint64_t& json_bytes);

}  // namespace signing
}  // namespace fatpte

#endif  // FATPTE_SRC_SIGNATURE_STATEMENT_HPP_
