// Program entries against their records in a build without ExecuTorch (-DFATPTE_EXECUTORCH=OFF):
// such a build has no reader of ExecuTorch's schema, so it reads no program and checks nothing of
// specs/executorch.md section 7 (entries/program_record.hpp says so; docs/cpp.md too).
#include "entries/program_record.hpp"

namespace fatpte {

Status check_program_entries(const Container&) { return Status(); }

}  // namespace fatpte
