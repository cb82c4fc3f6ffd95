// Receipts (specs/receipts.md, specs/receipt.schema.json): one JSON line per load and per
// fallback event, for a fleet owner to see what devices ran and why. Written from what the load
// policy recorded (the Dispatch), delivered to LoadOptions::receipt.
#ifndef FATPTE_SRC_RUN_RECEIPT_HPP_
#define FATPTE_SRC_RUN_RECEIPT_HPP_

#include <cstdint>
#include <string>

#include "fatpte/container.hpp"
#include "fatpte/device.hpp"
#include "fatpte/dispatch.hpp"
#include "fatpte/field.hpp"
#include "fatpte/select.hpp"
#include "fatpte/status.hpp"
#include "run/remember.hpp"

namespace fatpte {
namespace detail {

// The receipt of one load (ended with `result`) on `device` (its fingerprint, shared with the
// verdict store's key), one line of JSON without its newline. `selection`: the one the load used
// (null when none was made).
std::string load_receipt(const Container& container, DeviceFingerprint& device, const LoadOptions& options,
                         const Dispatch& dispatch, const Selection* selection, const Status& result,
                         std::uint64_t time);
// The receipt of one fallback event after a load.
std::string fallback_receipt(const Container& container, const LoadOptions& options, const FallbackEvent& event,
                             std::uint64_t time);
// load_receipt to options.receipt, when the options name one.
void deliver_load_receipt(const Container& container, DeviceFingerprint& device, const LoadOptions& options,
                          const Dispatch& dispatch, const Selection* selection, const Status& result);

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_RUN_RECEIPT_HPP_
