// The ExecuTorch backend ids fatpte knows by name: the fat delegate's own, the ids the backend
// words of fatpte's backend ids stand for, and what a fat delegate's entries need, read from its
// container without loading anything (the fat delegate and the loader both ask).
#ifndef FATPTE_SRC_EXECUTORCH_BACKEND_IDS_HPP_
#define FATPTE_SRC_EXECUTORCH_BACKEND_IDS_HPP_

#include <string>
#include <vector>

#include "fatpte/format.hpp"

namespace fatpte {
namespace et {

// The backend id fatpte's fat delegates are written with (fatpte/ops/fat_lowering.py): a program
// whose delegates name it needs the fat delegate library (delegate/fat_backend.hpp).
inline constexpr const char* kFatBackendId = "FatpteBackend";

// The ExecuTorch backend id a delegate-payload entry of a fat delegate runs on, given only its
// backend_id: the id a backend word stands for ("xnnpack" -> "XnnpackBackend", the table of
// fatpte/ops/program_entry.py's BACKEND_WORDS); else the entry's backend_id itself.
std::string delegate_backend_id(const std::string& backend_id);

// The ExecuTorch backends the entries of the fat delegate container `nfat` run on, each once, in
// table order: a backend payload's (its manifest entry's single executorch_backends id, else
// delegate_backend_id), a nested program's delegates'. Empty when the container cannot be read
// (the fat delegate refuses it at init, with the reason).
std::vector<std::string> fat_entry_backends(Bytes nfat);

}  // namespace et
}  // namespace fatpte

#endif  // FATPTE_SRC_EXECUTORCH_BACKEND_IDS_HPP_
