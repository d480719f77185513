# Cross-compiling for Windows with MinGW-w64 (Debian's gcc-mingw-w64-i686), tests run under Wine.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR i686)

set(FM5_TRIPLE i686-w64-mingw32)
set(CMAKE_C_COMPILER ${FM5_TRIPLE}-gcc)
set(CMAKE_RC_COMPILER ${FM5_TRIPLE}-windres)

# Libraries and headers come only from the MinGW sysroot, never from the Linux host; programs
# (llvm tools, python, wine) are host programs and are looked up on the host.
set(CMAKE_FIND_ROOT_PATH /usr/${FM5_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The wrapper takes the build directory first so that each build tree gets its own Wine prefix.
get_filename_component(FM5_SCRIPTS_DIR "${CMAKE_CURRENT_LIST_DIR}/../scripts" ABSOLUTE)
set(CMAKE_CROSSCOMPILING_EMULATOR "${FM5_SCRIPTS_DIR}/wine-run.sh;${CMAKE_BINARY_DIR}")
