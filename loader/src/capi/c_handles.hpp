// What the C API's files share: the C++ container behind a fatpte_container handle, and the one
// conversion of a Status into a fatpte_status and a fatpte_error (both defined in capi/c_api.cpp).
#ifndef FATPTE_SRC_CAPI_C_HANDLES_HPP_
#define FATPTE_SRC_CAPI_C_HANDLES_HPP_

#include "fatpte/container.hpp"
#include "fatpte/fatpte.h"
#include "fatpte/result.hpp"
#include "fatpte/status.hpp"

namespace fatpte {
namespace capi {

const Container* container_of(const fatpte_container* c) noexcept;
fatpte_status to_status(const Status& s, fatpte_error* error) noexcept;

}  // namespace capi
}  // namespace fatpte

#endif  // FATPTE_SRC_CAPI_C_HANDLES_HPP_
