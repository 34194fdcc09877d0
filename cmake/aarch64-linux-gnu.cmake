# Cross build for 64-bit Arm Linux (NEON) with Debian's g++-aarch64-linux-gnu; tests run under
# qemu-user (qemu-aarch64 with the cross sysroot), so ctest works unchanged on an x86-64 host.
#   cmake --preset aarch64      (see CMakePresets.json)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
# Header-only packages (Eigen) are found on the host; compiled ones (GoogleTest) are built from
# source in the cross build (ROPE_GTEST_FROM_SOURCE), since Debian ships no arm64 gtest here.
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

find_program(ROPE_QEMU_AARCH64 qemu-aarch64)
if(ROPE_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${ROPE_QEMU_AARCH64} -L /usr/aarch64-linux-gnu)
endif()
