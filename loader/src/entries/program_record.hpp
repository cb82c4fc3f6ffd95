// ExecuTorch program entries checked against their manifest records (specs/executorch.md section
// 7), the validator's last step, as fatpte/ops/validation.py's program_findings runs it with
// fatpte/ops/program_entry.py's record_problems: for each entry of payload kind ET12 of a
// version 2 container with a manifest, in table order, its program read (a payload that does not
// read, whose record states a signature, ExecuTorch backends or a program digest, is refused with
// the reader's code at field entries[i].payload), then rule 1 (E1101: the stated signature, or the
// program behind its adapter, agrees with the program's, unless fatpte.signature_check says
// `skipped` or `from:` another entry), rule 2 (E1102, at the table record: no backend word names a
// backend the program does not delegate to), rule 3 (E1103: executorch_backends), rule 4 (E1104:
// provenance executorch.pte.sha256). Rule 5 (E1105) is a warning, which the first error never is.
#ifndef FATPTE_SRC_ENTRIES_PROGRAM_RECORD_HPP_
#define FATPTE_SRC_ENTRIES_PROGRAM_RECORD_HPP_

#include "fatpte/container.hpp"
#include "fatpte/status.hpp"

namespace fatpte {

// The first error of section 7 in a container whose every other rule passed (validate() is OK);
// OK at once, reading nothing, when no entry is of kind ET12. A build without ExecuTorch
// (-DFATPTE_EXECUTORCH=OFF) reads no program and says OK.
Status check_program_entries(const Container& container);

}  // namespace fatpte

#endif  // FATPTE_SRC_ENTRIES_PROGRAM_RECORD_HPP_
