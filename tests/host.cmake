# The tests of the host build (cmake/host.cmake): every test that is not about Windows itself, run
# natively under the variant's sanitizer. Included by tests/CMakeLists.txt when FM5_HOST is on.
#   host-asan, host-fuzz: every portable test (ASan + UBSan, FM5_CHECKED on)
#   host-tsan: the tests that run threads against each other (FM5_HOST_TSAN_TESTS)
# A sanitizer report ends its process with an error, which fails the test: nothing is suppressed.

# About Windows itself: the NASM routines and their unwind data, and the system unwinder.
set(FM5_WINDOWS_ONLY_TESTS test_asm_twins test_asm_unwind test_stack_traces)
# The tests whose threads race through fm5's locks, lock-free lists and walks.
set(FM5_HOST_TSAN_TESTS test_multithread test_fastmm5_ports test_debug_scan test_c_api test_bad_pointer_race
                        test_bad_pointer_race_static test_large_block_cache test_debug_retention test_arena_affinity
                        test_thread_cache test_claims)

set(FM5_TESTS_DIR ${CMAKE_CURRENT_SOURCE_DIR})
file(GLOB FM5_TEST_SUPPORT_SOURCES CONFIGURE_DEPENDS ${FM5_TESTS_DIR}/support/*.c)
list(FILTER FM5_TEST_SUPPORT_SOURCES EXCLUDE REGEX "_windows\\.c$")
foreach(way fm5 fm5_static)
    set(support fm5_test_support)
    if(way STREQUAL fm5_static)
        set(support fm5_test_support_static)
    endif()
    add_library(${support} STATIC ${FM5_TEST_SUPPORT_SOURCES})
    target_link_libraries(${support} PUBLIC ${way} fm5_options)
    target_include_directories(${support} PUBLIC ${FM5_TESTS_DIR})
    # POSIX's declarations (strnlen, pthread_timedjoin_np, ...) beside C11's.
    target_compile_definitions(${support} PUBLIC _GNU_SOURCE)
endforeach()

# Tests keep their asserts (the library's build type adds -DNDEBUG only to the library's flags here).
string(REPLACE "-DNDEBUG" "" CMAKE_C_FLAGS_RELWITHDEBINFO "${CMAKE_C_FLAGS_RELWITHDEBINFO}")

# The sanitizers' options for every test: ASan's leak check stays on (the tests' own C-heap use must
# be clean too), a user SIGSEGV handler is allowed (fm5's release guard, src/base/os.h), and UBSan and
# TSan stop at their first report.
set(FM5_SANITIZER_ENVIRONMENT
    "ASAN_OPTIONS=abort_on_error=0:detect_leaks=1:allow_user_segv_handler=1"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
    "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1")

function(fm5_add_host_test name source)
    cmake_parse_arguments(PARSE_ARGV 2 arg "STATIC" "TIMEOUT" "")
    if(NOT arg_TIMEOUT)
        set(arg_TIMEOUT 300)
    endif()
    add_executable(${name} ${source})
    if(arg_STATIC)
        target_link_libraries(${name} PRIVATE fm5_test_support_static fm5_static)
    else()
        target_link_libraries(${name} PRIVATE fm5_test_support fm5)
    endif()
    target_link_libraries(${name} PRIVATE fm5_options m)
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES TIMEOUT ${arg_TIMEOUT} ENVIRONMENT "${FM5_SANITIZER_ENVIRONMENT}")
endfunction()

set(FM5_STATIC_TESTS test_os_failures test_arena_affinity test_address_map test_claims)
# One source, two tests (as in tests/CMakeLists.txt): the static one reports the guard's tombstones.
fm5_add_host_test(test_bad_pointer_race_static ${FM5_TESTS_DIR}/test_bad_pointer_race.c STATIC)
file(GLOB FM5_TEST_SOURCES CONFIGURE_DEPENDS ${FM5_TESTS_DIR}/test_*.c)
foreach(source IN LISTS FM5_TEST_SOURCES)
    get_filename_component(name ${source} NAME_WE)
    if(name IN_LIST FM5_WINDOWS_ONLY_TESTS)
        continue()
    endif()
    if(FM5_SANITIZE MATCHES "thread" AND NOT name IN_LIST FM5_HOST_TSAN_TESTS)
        continue()
    endif()
    if(name IN_LIST FM5_STATIC_TESTS)
        fm5_add_host_test(${name} ${source} STATIC)
    else()
        fm5_add_host_test(${name} ${source})
    endif()
endforeach()

foreach(run exit window)
    add_test(NAME test_claims_${run} COMMAND test_claims ${run})
    set_tests_properties(test_claims_${run} PROPERTIES TIMEOUT 300 ENVIRONMENT "${FM5_SANITIZER_ENVIRONMENT}")
endforeach()

# The layer rules (scripts/check-layers.py) on the host build's objects too: os_posix.c must keep to
# them as os_windows.c does.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
find_program(FM5_LLVM_NM llvm-nm REQUIRED)
add_test(NAME layers
         COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check-layers.py ${PROJECT_SOURCE_DIR}
                 --objects ${CMAKE_BINARY_DIR}/CMakeFiles/fm5.dir/src --nm ${FM5_LLVM_NM})

# bench/run.py takes again a run that Wine ended without a word from the program, and nothing else
# (tests/bench_runner_retry.py; the benchmark program is a stand-in, so no Wine is needed). Once: in
# host-asan's run, not host-tsan's too: it does not depend on the sanitizer.
if(NOT FM5_SANITIZE MATCHES "thread")
    add_test(NAME bench_runner_retry
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/bench_runner_retry.py)
    set_tests_properties(bench_runner_retry PROPERTIES TIMEOUT 120)
    # bench/run.py scales a slow peer down rather than dropping it (tests/bench_runner_scale.py).
    add_test(NAME bench_runner_scale
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/bench_runner_scale.py)
    set_tests_properties(bench_runner_scale PROPERTIES TIMEOUT 120)
    # bench/run.py resolves the allocator inside fm5bench's wrappers (tests/bench_runner_wrappers.py).
    add_test(NAME bench_runner_wrappers
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/bench_runner_wrappers.py)
    set_tests_properties(bench_runner_wrappers PROPERTIES TIMEOUT 120)
    # bench/report.py's table of fm5 against the faster peer, from a made-up run
    # (tests/bench_report_peers.py).
    add_test(NAME bench_report_peers
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/bench_report_peers.py)
    set_tests_properties(bench_report_peers PROPERTIES TIMEOUT 120)
    # scripts/silent-failures.py, which picks the failed tests that scripts/run-tests.sh runs once
    # more (tests/silent_failures.py, from a made-up CTest log).
    add_test(NAME silent_failures
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/silent_failures.py)
    set_tests_properties(silent_failures PROPERTIES TIMEOUT 60)
endif()
