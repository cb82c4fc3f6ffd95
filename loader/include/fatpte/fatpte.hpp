// fatpte.hpp: the whole C++ interface of libfatpte in one include, for applications that want it
// all. Each concept has its own header (loader/README.md lists them); libfatpte's own sources
// include only the ones they use.
#ifndef FATPTE_FATPTE_HPP_
#define FATPTE_FATPTE_HPP_

#include "fatpte/container.hpp"
#include "fatpte/crc32c.hpp"
#include "fatpte/device.hpp"
#include "fatpte/dispatch.hpp"
#include "fatpte/format.hpp"
#include "fatpte/profile.hpp"
#include "fatpte/result.hpp"
#include "fatpte/select.hpp"
#include "fatpte/signature.hpp"
#include "fatpte/status.hpp"
#include "fatpte/tensor.hpp"
#include "fatpte/text.hpp"
#include "fatpte/vendor_search.hpp"

// fatpte/module.hpp (a container as an ExecuTorch Module) needs ExecuTorch's headers: included on
// its own.

#endif  // FATPTE_FATPTE_HPP_
