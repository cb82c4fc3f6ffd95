// The self-test a load runs before it serves an entry (LoadOptions::self_test): the hook
// run/dispatch.cpp calls once an entry has loaded. See fatpte/self_test.hpp.
#ifndef FATPTE_SRC_RUN_SELF_TEST_HPP_
#define FATPTE_SRC_RUN_SELF_TEST_HPP_

#include <functional>
#include <memory>
#include <string>

#include "fatpte/container.hpp"
#include "fatpte/dispatch.hpp"
#include "fatpte/signature.hpp"
#include "fatpte/status.hpp"

namespace fatpte {
namespace detail {

// Loads the entry again (a fresh method, in the program's initial state) into `out`; `why` says
// why it could not be (`out` empty). Both empty: the entry's kind keeps no state (the example
// backend ABI). A failed Status is damage, which stops the load.
using Reload = std::function<Status(std::unique_ptr<Loaded>& out, std::string& why)>;

// Run `loaded`'s golden calls (fatpte::self_test). Passed: a line in attempt.details, and, when
// the method has state (its signature lists buffers, or states none), `loaded` replaced by a fresh
// load so that serving starts from the initial state. Failed: `loaded` reset and attempt.outcome
// saying why (E1401, the call, the output, the figures): the caller tries the next entry. When a
// signature is required (`signature` not null), each golden tensor's bytes are hashed against the
// statement first (specs/nfat-signature.md step 10), so nothing unverified reaches the program.
// A failed Status is damage or tampering, which stops the load.
Status self_test_on_load(const Container& container, const SignatureCheck* signature, Attempt& attempt,
                         std::unique_ptr<Loaded>& loaded, const Reload& reload);

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_RUN_SELF_TEST_HPP_
