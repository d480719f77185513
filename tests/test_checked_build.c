/*
 * test_checked_build — FM5_ASSERT is on exactly in the checked variants, and an audit catches a broken
 * invariant:
 *   - a child process frees small blocks of one class, then clears the Free bit in the status word of
 *     one freed block (a program writing just before a freed block), and walks the heap;
 *   - in a checked build (FM5_CHECKED=1) the walk's span audit must stop the child with exit code 134
 *     and "fm5: assertion failed" on its stderr;
 *   - in every other build the assertions are compiled out: the walk completes and the child exits 0.
 * The child's stderr goes to a file that the parent reads.
 */
#include "test_util.h"

#define BLOCKS 64
#define BLOCK_SIZE 40

static int corrupt_and_walk(void)
{
    /* The audit reads the span's free chain: freed blocks must reach it, not this thread's cache. */
    FastMM_SetThreadCaches(0);
    void *blocks[BLOCKS];
    for (int i = 0; i < BLOCKS; i++)
        blocks[i] = FastMM_GetMem(BLOCK_SIZE);
    for (int i = 0; i < BLOCKS; i += 2)
        FastMM_FreeMem(blocks[i]);
    /* blocks[10] is free, on its span's free chain: its status word no longer says so. */
    volatile uint16_t *status = (volatile uint16_t *)blocks[10] - 1;
    *status &= (uint16_t)~1u;
    FastMM_HeapStatus heap;
    FastMM_GetHeapStatus(&heap, 1000);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return corrupt_and_walk();
    tu_init("test_checked_build");
    char exe[1024];
    tu_program_path(exe, sizeof exe);
    char error_file[1024 + 16];
    snprintf(error_file, sizeof error_file, "%s.stderr.txt", exe);
    static const char *const child_arguments[] = { "child", NULL };
    int exit_code = tu_run_self(child_arguments, error_file, 60000);
    if (CHECK_MSG(exit_code >= 0, "could not run the child")) {
        char text[4096] = { 0 };
        char *content = tu_read_file(error_file);
        if (content) {
            snprintf(text, sizeof text, "%s", content);
            free(content);
        }
        tu_delete_file(error_file);
#if FM5_CHECKED
        SECTION("checked build: the span audit stops the child");
        CHECK_MSG(exit_code == 134, "child exit code %d, expected 134; stderr: %s", exit_code, text);
        CHECK_MSG(strstr(text, "fm5: assertion failed") != NULL, "child stderr: %s", text);
#else
        SECTION("release build: assertions compiled out");
        CHECK_MSG(exit_code == 0, "child exit code %d, expected 0; stderr: %s", exit_code, text);
        CHECK_MSG(strstr(text, "assertion failed") == NULL, "child stderr: %s", text);
#endif
    }
    return test_finish();
}
