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

static int run_child(const char *exe, const char *error_file, DWORD *exit_code)
{
    SECURITY_ATTRIBUTES inherit = { sizeof inherit, NULL, TRUE };
    HANDLE error = CreateFileA(error_file, GENERIC_WRITE, FILE_SHARE_READ, &inherit, CREATE_ALWAYS,
                               FILE_ATTRIBUTE_NORMAL, NULL);
    if (error == INVALID_HANDLE_VALUE)
        return 0;
    char command[MAX_PATH + 32];
    snprintf(command, sizeof command, "\"%s\" child", exe);
    STARTUPINFOA startup = { 0 };
    startup.cb = sizeof startup;
    startup.dwFlags = STARTF_USESTDHANDLES;
    startup.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
    startup.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
    startup.hStdError = error;
    PROCESS_INFORMATION process;
    BOOL started = CreateProcessA(exe, command, NULL, NULL, TRUE, 0, NULL, NULL, &startup, &process);
    CloseHandle(error);
    if (!started)
        return 0;
    WaitForSingleObject(process.hProcess, 60000);
    GetExitCodeProcess(process.hProcess, exit_code);
    CloseHandle(process.hThread);
    CloseHandle(process.hProcess);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return corrupt_and_walk();
    tu_init("test_checked_build");
    char exe[MAX_PATH];
    GetModuleFileNameA(NULL, exe, MAX_PATH);
    char error_file[MAX_PATH + 16];
    snprintf(error_file, sizeof error_file, "%s.stderr.txt", exe);
    DWORD exit_code = 0;
    if (CHECK_MSG(run_child(exe, error_file, &exit_code), "could not run the child, error %lu",
                  (unsigned long)GetLastError())) {
        char text[4096] = { 0 };
        FILE *file = fopen(error_file, "rb");
        if (file) {
            size_t length = fread(text, 1, sizeof text - 1, file);
            text[length] = 0;
            fclose(file);
        }
        DeleteFileA(error_file);
#if FM5_CHECKED
        SECTION("checked build: the span audit stops the child");
        CHECK_MSG(exit_code == 134, "child exit code %lu, expected 134; stderr: %s", (unsigned long)exit_code, text);
        CHECK_MSG(strstr(text, "fm5: assertion failed") != NULL, "child stderr: %s", text);
#else
        SECTION("release build: assertions compiled out");
        CHECK_MSG(exit_code == 0, "child exit code %lu, expected 0; stderr: %s", (unsigned long)exit_code, text);
        CHECK_MSG(strstr(text, "assertion failed") == NULL, "child stderr: %s", text);
#endif
    }
    return test_finish();
}
