# The host build (FM5_HOST=ON): fm5's portable C core compiled natively by clang on Linux, on
# base/os_posix.c instead of base/os_windows.c, with the sanitizer FM5_SANITIZE names. It ships
# nothing; it exists so that the tests run under AddressSanitizer + UBSan (host-asan), ThreadSanitizer
# (host-tsan) and libFuzzer (host-fuzz), and so that perf can profile the allocator's loops.
# The same sources as the DLLs' pure-C variant: every src/*/*.c but the Windows layer's.
if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "the host build needs clang (its sanitizers and libFuzzer): the host-* presets set it")
endif()

set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_C_EXTENSIONS OFF)
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
set(CMAKE_ARCHIVE_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib)
set(CMAKE_LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib)

option(FM5_CHECKED "Turn on every FM5_ASSERT (src/base/checked.h)" OFF)
option(FM5_FUZZ "Build the libFuzzer harness (tests/fuzz), the host-fuzz preset" OFF)
set(FM5_BITS 64)

# No recovery: the first report of any sanitizer ends the process with an error, so it fails its test.
set(FM5_SANITIZER_FLAGS "")
if(FM5_SANITIZE)
    set(FM5_SANITIZER_FLAGS -fsanitize=${FM5_SANITIZE} -fno-sanitize-recover=all)
endif()

# -O1 under a sanitizer (its reports stay readable); -O2, as the DLLs, for the profile build.
set(FM5_HOST_OPTIMIZATION -O2)
if(FM5_SANITIZE)
    set(FM5_HOST_OPTIMIZATION -O1)
endif()
add_library(fm5_options INTERFACE)
target_compile_options(fm5_options INTERFACE ${FM5_HOST_OPTIMIZATION} -g -fno-omit-frame-pointer -Wall -Wextra -Werror
                       -fno-strict-aliasing ${FM5_SANITIZER_FLAGS})
target_link_options(fm5_options INTERFACE ${FM5_SANITIZER_FLAGS})
target_compile_definitions(fm5_options INTERFACE
    FM5_ASM=0
    FM5_SSE2_CHECKER=0
    FM5_CHECKED=$<BOOL:${FM5_CHECKED}>
    FM5_BULK_FILL=1)

file(GLOB FM5_C_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/*/*.c)
list(FILTER FM5_C_SOURCES EXCLUDE REGEX "_windows\\.c$")

find_package(Threads REQUIRED)

# libfm5.so: what a test that uses only fm5.h links, the DLL's counterpart (loaded and unloaded
# through the constructor and destructor in api/startup.c); only the FM5_API names are exported.
add_library(fm5 SHARED ${FM5_C_SOURCES})
target_include_directories(fm5 PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
target_compile_definitions(fm5 PRIVATE FM5_BUILDING_DLL)
target_compile_options(fm5 PRIVATE -fvisibility=hidden)
target_link_libraries(fm5 PRIVATE fm5_options Threads::Threads ${CMAKE_DL_LIBS})

add_library(fm5_static STATIC ${FM5_C_SOURCES})
target_include_directories(fm5_static PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
target_compile_definitions(fm5_static PUBLIC FM5_STATIC)
target_link_libraries(fm5_static PRIVATE fm5_options)
target_link_libraries(fm5_static PUBLIC Threads::Threads ${CMAKE_DL_LIBS})

enable_testing()
if(FM5_FUZZ)
    # host-fuzz runs the fuzzer only: the other tests have host-asan.
    add_subdirectory(tests/fuzz)
else()
    add_subdirectory(tests)
endif()

# host-profile (no sanitizer): the benchmark loop for perf and for the glibc / mimalloc cross-check
# (scripts/profile-host.sh, docs/host-build.md).
if(NOT FM5_SANITIZE)
    add_executable(alloc_free_loop ${PROJECT_SOURCE_DIR}/bench/alloc_free_loop.c)
    target_link_libraries(alloc_free_loop PRIVATE fm5 fm5_options)
endif()
