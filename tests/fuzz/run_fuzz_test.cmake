# CTest's fuzz_heap: cmake -DFUZZER=... -DSEEDS=... -DWORK=... -DRUNS=... -DSECONDS=... -P run_fuzz_test.cmake
# Runs the fuzzer RUNS times (at most SECONDS) from a fresh, empty corpus folder in WORK plus the
# committed seeds in SEEDS, with a fixed seed. A finding fails the test and names the reproducer.
foreach(variable FUZZER SEEDS WORK RUNS SECONDS)
    if(NOT DEFINED ${variable})
        message(FATAL_ERROR "run_fuzz_test.cmake needs -D${variable}=...")
    endif()
endforeach()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
# A failed FM5_ASSERT ends the process by _exit(134), past libFuzzer's crash handler: the harness writes
# every input here first, so that the last one is the reproducer.
set(ENV{FM5_FUZZ_LAST_INPUT} ${WORK}/last-input)

execute_process(
    COMMAND ${FUZZER} -runs=${RUNS} -max_total_time=${SECONDS} -seed=1 -max_len=512 -timeout=60
            -print_final_stats=1 -artifact_prefix=${WORK}/artifacts/ ${WORK}/corpus ${SEEDS}
    WORKING_DIRECTORY ${WORK}
    RESULT_VARIABLE result)

if(NOT result STREQUAL "0")
    file(GLOB artifacts ${WORK}/artifacts/*)
    if(artifacts)
        message(FATAL_ERROR "fuzz_heap failed (${result}); reproducer: ${artifacts}\n"
                            "replay: ${FUZZER} <reproducer>")
    endif()
    message(FATAL_ERROR "fuzz_heap failed (${result}) without a libFuzzer artifact (an FM5_ASSERT?); "
                        "the input that was running: ${WORK}/last-input\nreplay: ${FUZZER} ${WORK}/last-input")
endif()
