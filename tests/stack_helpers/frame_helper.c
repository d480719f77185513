/* A DLL whose exported function calls back through a frame of its own, for test_stack_traces: built
 * twice at the same preferred base with frames of different shapes (HELPER_FRAME_BYTES), so that a
 * cached unwind step of the first, used for the second after an unload and a load, gives a wrong
 * trace. */
#ifndef HELPER_FRAME_BYTES
#  error "HELPER_FRAME_BYTES must be defined"
#endif

typedef int (*helper_callback)(int);

__declspec(dllexport) __attribute__((noinline)) int helper_call(helper_callback callback, int value)
{
    /* Only the frame's size differs between the two builds: both sizes need 32-bit displacements, so
     * the code, and the return address of the callback's call, are the same in both. */
    volatile char frame[HELPER_FRAME_BYTES];
    frame[0] = (char)value;
    frame[HELPER_FRAME_BYTES - 1] = (char)(value + 1);
    int result = callback(value + frame[0]);
    return result + frame[HELPER_FRAME_BYTES - 1];
}
