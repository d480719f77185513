/*
 * test_borlndmm — a BorlndMM.dll called the way Delphi and C++Builder programs call it: every export of
 * FastMM5's BorlndMM.dpr with its real convention (cdecl for GetMemory/FreeMemory/ReallocMemory,
 * Delphi's register convention on Win32 through tests/borlndmm/register_calls_32.asm, the platform's
 * on Win64, records through the hidden result pointer).
 *
 *   test_borlndmm DLL fm5|reference release|debug
 *
 * The same checks run against fm5's BorlndMM.dll and, as the reference, FastMM5's own precompiled one
 * (../shared/peers/fastmm5/), so the two must agree. fm5 follows today's BorlndMM.dpr; the precompiled
 * DLL (2022-11-29) predates four signature changes, and `reference` calls it with its own:
 * FastMM_GetUsageSummary and FastMM_ScanDebugBlocksForCorruption without the timeout, FastMM_WalkBlocks
 * without the two allocation-group bounds, FastMM_LogStateToFile taking Delphi strings (not called);
 * FastMM_ProcessAllPendingFrees is not exported by it. `fm5` adds what only fm5 promises (bad pointers
 * refused without a crash; a scan that answers False instead of raising). `debug` expects every block
 * to be a debug block (fm5 with FM5_DEBUG=1 or a BorlndMM.debug side file, FastMM5's debug build).
 *   test_borlndmm DLL side-file    copies the DLL into a new folder beside BorlndMM.debug, loads it and
 *                                  checks that it came up in debug mode.
 * Exits with the number of failed checks.
 */
#include <windows.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "support/standalone_check.h"

static HMODULE dll;
static int is_fm5, is_debug;

static void *export_of(const char *name)
{
    void *code = (void *)GetProcAddress(dll, name);
    CHECK(code != NULL, "%s is not exported", name);
    return code;
}

/* ---- Calls in Delphi's convention ------------------------------------------------------------- */

#ifdef _WIN64
/* Win64: Delphi uses the Microsoft x64 convention; every argument is passed pointer-wide here. */
static size_t delphi_call(const void *code, unsigned count, const size_t *a)
{
    switch (count) {
    case 0: return ((size_t (*)(void))code)();
    case 1: return ((size_t (*)(size_t))code)(a[0]);
    case 2: return ((size_t (*)(size_t, size_t))code)(a[0], a[1]);
    case 3: return ((size_t (*)(size_t, size_t, size_t))code)(a[0], a[1], a[2]);
    case 5: return ((size_t (*)(size_t, size_t, size_t, size_t, size_t))code)(a[0], a[1], a[2], a[3], a[4]);
    case 7: return ((size_t (*)(size_t, size_t, size_t, size_t, size_t, size_t, size_t))code)(a[0], a[1], a[2], a[3],
                                                                                          a[4], a[5], a[6]);
    case 9:
        return ((size_t (*)(size_t, size_t, size_t, size_t, size_t, size_t, size_t, size_t, size_t))code)(
            a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]);
    }
    CHECK(0, "no caller for %u arguments", count);
    return 0;
}
#else
size_t register_call(const void *code, const size_t *arguments, unsigned count);
extern int register_call_stack_error;
static size_t delphi_call(const void *code, unsigned count, const size_t *a)
{
    size_t arguments[12] = {0};
    memcpy(arguments, a, count * sizeof *a);
    size_t result = register_call(code, arguments, count);
    CHECK(register_call_stack_error == 0, "the callee left the stack %d bytes off (%u arguments)",
          register_call_stack_error, count);
    return result;
}
#endif

#define CALL(code, ...) delphi_call(code, sizeof((size_t[]){__VA_ARGS__}) / sizeof(size_t), (size_t[]){__VA_ARGS__})
#define CALL0(code) delphi_call(code, 0, NULL)
/* A Delphi Boolean is the low byte of the result register. */
#define BOOLEAN(value) ((uint8_t)(value))

/* Records through the hidden pointer: after the declared arguments on Win32, first on Win64. */
#ifdef _WIN64
#define CALL_RECORD0(code, record) CALL(code, (size_t)(record))
#define CALL_RECORD1(code, a, record) CALL(code, (size_t)(record), (size_t)(a))
#else
#define CALL_RECORD0(code, record) CALL(code, (size_t)(record))
#define CALL_RECORD1(code, a, record) CALL(code, (size_t)(a), (size_t)(record))
#endif

/* ---- The records -------------------------------------------------------------------------------- */

typedef struct { size_t TotalAddrSpace, TotalUncommitted, TotalCommitted, TotalAllocated, TotalFree, FreeSmall,
                 FreeBig, Unused, Overhead; uint32_t HeapErrorCode; } heap_status;
typedef struct { size_t AllocatedBytes, OverheadBytes; double EfficiencyPercentage; } usage_summary;
typedef struct {
    void *BlockAddress; const unsigned char *DebugInformation; ptrdiff_t BlockSize, UsableSize; void *UserData;
    uint8_t ArenaIndex, BlockType, BlockIsFree, IsSequentialFeedMediumBlockSpan;
    int32_t MediumBlockSequentialFeedSpanUnusedBytes;
    uint8_t IsSequentialFeedSmallBlockSpan; uint16_t SmallBlockSpanBlockSize;
    int32_t SmallBlockSequentialFeedSpanUnusedBytes;
} walk_block_info;
enum { BT_LARGE, BT_MEDIUM_SPAN, BT_MEDIUM, BT_SMALL_SPAN, BT_SMALL };

/* A record followed by canary bytes: a callee that writes past the record's size is caught. */
#define CANARY 0xA5
static int canary_intact(const unsigned char *after, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (after[i] != CANARY)
            return 0;
    return 1;
}

/* ---- Blocks of the three kinds ------------------------------------------------------------------ */

static const size_t sizes[] = {1, 8, 60, 500, 2600, 3000, 40000, 300000, 600000, 3 << 20};
#define SIZE_COUNT (sizeof sizes / sizeof sizes[0])


static void cdecl_trio(void)
{
    void *(*get_memory)(ptrdiff_t) = (void *(*)(ptrdiff_t))export_of("GetMemory");
    int (*free_memory)(void *) = (int (*)(void *))export_of("FreeMemory");
    void *(*realloc_memory)(void *, ptrdiff_t) = (void *(*)(void *, ptrdiff_t))export_of("ReallocMemory");
    if (!get_memory || !free_memory || !realloc_memory)
        return;
    for (size_t i = 0; i < SIZE_COUNT; i++) {
        unsigned char *p = get_memory((ptrdiff_t)sizes[i]);
        if (!CHECK(p != NULL, "GetMemory(%zu)", sizes[i]))
            continue;
        standalone_fill(p, sizes[i], (unsigned)i);
        unsigned char *q = realloc_memory(p, (ptrdiff_t)(sizes[i] * 2 + 100));
        if (CHECK(q != NULL, "ReallocMemory up from %zu", sizes[i])) {
            CHECK(standalone_intact(q, sizes[i], (unsigned)i), "ReallocMemory up from %zu lost content", sizes[i]);
            p = q;
        }
        q = realloc_memory(p, (ptrdiff_t)(sizes[i] / 2 + 1));
        if (CHECK(q != NULL, "ReallocMemory down from %zu", sizes[i])) {
            CHECK(standalone_intact(q, sizes[i] / 2 + 1, (unsigned)i), "ReallocMemory down from %zu lost content", sizes[i]);
            p = q;
        }
        CHECK(free_memory(p) == 0, "FreeMemory of a %zu-byte block", sizes[i]);
    }
    CHECK(free_memory(NULL) == 0, "FreeMemory(nil) answers 0");
    unsigned char *p = realloc_memory(NULL, 100);
    if (CHECK(p != NULL, "ReallocMemory(nil, 100) allocates")) {
        standalone_fill(p, 100, 3);
        CHECK(free_memory(p) == 0, "FreeMemory after ReallocMemory(nil)");
    }
}

static void register_core(void)
{
    void *get_mem = export_of("@Borlndmm@SysGetMem$qqri");
    void *free_mem = export_of("@Borlndmm@SysFreeMem$qqrpv");
    void *realloc_mem = export_of("@Borlndmm@SysReallocMem$qqrpvi");
    void *alloc_mem = export_of("@Borlndmm@SysAllocMem$qqri");
    void *register_leak = export_of("@Borlndmm@SysRegisterExpectedMemoryLeak$qqrpi");
    void *unregister_leak = export_of("@Borlndmm@SysUnregisterExpectedMemoryLeak$qqrpi");
    if (!get_mem || !free_mem || !realloc_mem || !alloc_mem || !register_leak || !unregister_leak)
        return;
    for (size_t i = 0; i < SIZE_COUNT; i++) {
        unsigned char *p = (unsigned char *)CALL(get_mem, sizes[i]);
        if (!CHECK(p != NULL, "SysGetMem(%zu)", sizes[i]))
            continue;
        standalone_fill(p, sizes[i], (unsigned)i + 40);
        unsigned char *q = (unsigned char *)CALL(realloc_mem, (size_t)p, sizes[i] * 3 + 1);
        if (CHECK(q != NULL, "SysReallocMem up from %zu", sizes[i])) {
            CHECK(standalone_intact(q, sizes[i], (unsigned)i + 40), "SysReallocMem from %zu lost content", sizes[i]);
            p = q;
        }
        CHECK((int)CALL(free_mem, (size_t)p) == 0, "SysFreeMem of a %zu-byte block", sizes[i]);

        /* AllocMem zeroes, also when it reuses a block that was just freed dirty. */
        unsigned char *dirty = (unsigned char *)CALL(get_mem, sizes[i]);
        if (dirty) {
            memset(dirty, 0xEE, sizes[i]);
            CALL(free_mem, (size_t)dirty);
        }
        unsigned char *zeroed = (unsigned char *)CALL(alloc_mem, sizes[i]);
        if (CHECK(zeroed != NULL, "SysAllocMem(%zu)", sizes[i])) {
            size_t nonzero = 0;
            for (size_t j = 0; j < sizes[i]; j++)
                nonzero += zeroed[j] != 0;
            CHECK(nonzero == 0, "SysAllocMem(%zu) left %zu bytes not zero", sizes[i], nonzero);
            CHECK((int)CALL(free_mem, (size_t)zeroed) == 0, "SysFreeMem after SysAllocMem(%zu)", sizes[i]);
        }
    }
    void *leak = (void *)CALL(get_mem, 100);
    CHECK(BOOLEAN(CALL(register_leak, (size_t)leak)) == 1, "SysRegisterExpectedMemoryLeak answers True");
    CHECK(BOOLEAN(CALL(unregister_leak, (size_t)leak)) == 1, "SysUnregisterExpectedMemoryLeak answers True");
    CHECK(BOOLEAN(CALL(unregister_leak, (size_t)leak)) == 0, "a second unregistration answers False");
    CALL(free_mem, (size_t)leak);

    if (is_fm5) {
        /* fm5 refuses what it never handed out, without a crash (FastMM5 may raise or fault here). */
        static char not_a_block[64];
        CHECK((int)CALL(free_mem, (size_t)(not_a_block + 16)) == -1, "SysFreeMem of a static answers -1");
        CHECK(CALL(realloc_mem, (size_t)(not_a_block + 16), 10) == 0, "SysReallocMem of a static answers nil");
        unsigned char *p = (unsigned char *)CALL(get_mem, 5000);
        CALL(free_mem, (size_t)p);
        CHECK((int)CALL(free_mem, (size_t)p) == -1, "a double SysFreeMem answers -1");
    }
}

static void small_exports(void)
{
    void *add_ref = export_of("@Borlndmm@HeapAddRef$qqrv"), *release = export_of("@Borlndmm@HeapRelease$qqrv");
    void *count = export_of("GetAllocMemCount"), *size = export_of("GetAllocMemSize");
    void *dump = export_of("DumpBlocks");
    if (add_ref)
        CHECK((int)CALL0(add_ref) == 2, "HeapAddRef answers 2");
    if (release)
        CHECK((int)CALL0(release) == 2, "HeapRelease answers 2");
    if (count)
        CHECK((int)CALL0(count) == 0, "GetAllocMemCount answers 0");
    if (size)
        CHECK((int)CALL0(size) == 0, "GetAllocMemSize answers 0");
    if (dump)
        CALL0(dump);
}

/* ---- Heap status, usage summary, walking ---------------------------------------------------------- */

static struct { void *p; size_t size; int found; int type; } held[SIZE_COUNT];
static void *walk_user_data = (void *)0x5EED;
static int walk_bad_user_data, walk_large_only, walk_wrong_type, walk_blocks;
static int walk_debug_headers_right, walk_debug_headers_wrong;

#ifndef _WIN64
void walk_callback_register(void);
#endif

/* The debug header's user size: FastMM5's layout (at 40 on Win32, 32 on Win64), which fm5 keeps. */
static size_t debug_user_size(const unsigned char *header)
{
    size_t size;
    memcpy(&size, header + (sizeof(void *) == 4 ? 40 : 32), sizeof size);
    return size;
}

void walk_callback_c(const walk_block_info *info);
void walk_callback_c(const walk_block_info *info)
{
    walk_blocks++;
    if (info->UserData != walk_user_data)
        walk_bad_user_data++;
    if (walk_large_only && info->BlockType != BT_LARGE)
        walk_wrong_type++;
    for (size_t i = 0; i < SIZE_COUNT; i++)
        if (held[i].p == info->BlockAddress) {
            held[i].found++;
            held[i].type = info->BlockType;
            if (info->UsableSize < (ptrdiff_t)held[i].size || info->BlockIsFree)
                walk_wrong_type++;
            if (is_debug) {
                if (info->DebugInformation && debug_user_size(info->DebugInformation) == held[i].size)
                    walk_debug_headers_right++;
                else
                    walk_debug_headers_wrong++;
            }
        }
}

static int walk(void *walk_blocks_code, unsigned types)
{
#ifdef _WIN64
    const void *callback = (const void *)walk_callback_c;
#else
    const void *callback = (const void *)walk_callback_register;
#endif
    walk_blocks = 0;
    if (!is_fm5)
        return BOOLEAN(CALL(walk_blocks_code, (size_t)callback, types, 1, (size_t)walk_user_data, 1000));
    return BOOLEAN(CALL(walk_blocks_code, (size_t)callback, types, 1, (size_t)walk_user_data, 1000, 0, 0xFFFFFFFFu));
}

static void get_usage_summary(void *code, usage_summary *summary)
{
    if (is_fm5)
        CALL_RECORD1(code, 50, summary);
    else
        CALL_RECORD0(code, summary);
}

static int scan_debug_blocks(void *code)
{
    return is_fm5 ? BOOLEAN(CALL(code, 50)) : BOOLEAN(CALL0(code));
}

static void status_and_walk(void)
{
    void *get_mem = export_of("@Borlndmm@SysGetMem$qqri"), *free_mem = export_of("@Borlndmm@SysFreeMem$qqrpv");
    void *heap_status_code = export_of("GetHeapStatus"), *summary_code = export_of("FastMM_GetUsageSummary");
    void *walk_code = export_of("FastMM_WalkBlocks");
    if (!get_mem || !free_mem || !heap_status_code || !summary_code || !walk_code)
        return;

    struct { heap_status status; unsigned char canary[32]; } before, during;
    struct { usage_summary summary; unsigned char canary[32]; } summary_before, summary_during;
    memset(&before, CANARY, sizeof before);
    memset(&during, CANARY, sizeof during);
    memset(&summary_before, CANARY, sizeof summary_before);
    memset(&summary_during, CANARY, sizeof summary_during);
    CALL_RECORD0(heap_status_code, &before.status);
    get_usage_summary(summary_code, &summary_before.summary);

    size_t total = 0;
    for (size_t i = 0; i < SIZE_COUNT; i++) {
        held[i].size = sizes[i];
        held[i].p = (void *)CALL(get_mem, sizes[i]);
        held[i].found = 0;
        total += sizes[i];
    }
    CALL_RECORD0(heap_status_code, &during.status);
    get_usage_summary(summary_code, &summary_during.summary);

    CHECK(canary_intact(before.canary, sizeof before.canary), "GetHeapStatus wrote past THeapStatus");
    CHECK(canary_intact(summary_before.canary, sizeof summary_before.canary),
          "FastMM_GetUsageSummary wrote past TFastMM_UsageSummary");
    CHECK(during.status.TotalAllocated >= before.status.TotalAllocated + total,
          "THeapStatus.TotalAllocated grew by %zu for %zu bytes held",
          during.status.TotalAllocated - before.status.TotalAllocated, total);
    CHECK(during.status.TotalAddrSpace >= during.status.TotalAllocated && during.status.TotalCommitted > 0,
          "TotalAddrSpace %zu, TotalAllocated %zu, TotalCommitted %zu", during.status.TotalAddrSpace,
          during.status.TotalAllocated, during.status.TotalCommitted);
    CHECK(during.status.HeapErrorCode == 0, "HeapErrorCode %u", during.status.HeapErrorCode);
    CHECK(summary_during.summary.AllocatedBytes >= summary_before.summary.AllocatedBytes + total,
          "AllocatedBytes grew by %zu for %zu bytes held",
          summary_during.summary.AllocatedBytes - summary_before.summary.AllocatedBytes, total);
    CHECK(summary_during.summary.EfficiencyPercentage > 0 && summary_during.summary.EfficiencyPercentage <= 100,
          "EfficiencyPercentage %.2f", summary_during.summary.EfficiencyPercentage);

    walk_large_only = 0;
    CHECK(walk(walk_code, 0) == 1, "FastMM_WalkBlocks of every type answers True");
    for (size_t i = 0; i < SIZE_COUNT; i++) {
        CHECK(held[i].found == 1, "the %zu-byte block was walked %d times", sizes[i], held[i].found);
        int expected = sizes[i] <= 2600 ? BT_SMALL : sizes[i] <= 558000 ? BT_MEDIUM : BT_LARGE;
        /* A debug block's header and footer move the 2600-byte one into the medium range. */
        CHECK(held[i].type == expected || (is_debug && sizes[i] == 2600 && held[i].type == BT_MEDIUM), "the %zu-byte block is of type %d, not %d", sizes[i], held[i].type, expected);
        held[i].found = 0;
    }
    CHECK(walk_bad_user_data == 0, "%d callbacks got the wrong AUserData", walk_bad_user_data);
    if (is_debug)
        CHECK(walk_debug_headers_wrong == 0 && walk_debug_headers_right == (int)SIZE_COUNT,
              "debug headers: %d right, %d wrong", walk_debug_headers_right, walk_debug_headers_wrong);
    walk_large_only = 1;
    CHECK(walk(walk_code, 1u << BT_LARGE) == 1, "FastMM_WalkBlocks([btLargeBlock]) answers True");
    int large = 0;
    for (size_t i = 0; i < SIZE_COUNT; i++)
        large += held[i].found;
    CHECK(large == 2 && walk_wrong_type == 0, "[btLargeBlock] found %d held large blocks, %d of other types", large,
          walk_wrong_type);

    for (size_t i = 0; i < SIZE_COUNT; i++)
        CALL(free_mem, (size_t)held[i].p);
}

/* ---- The other extras --------------------------------------------------------------------------- */

static int file_contains(const wchar_t *path, const char *text)
{
    HANDLE file = CreateFileW(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, OPEN_EXISTING, 0, NULL);
    if (file == INVALID_HANDLE_VALUE)
        return -1;
    static char buffer[1 << 20];
    DWORD n = 0;
    ReadFile(file, buffer, sizeof buffer - 1, &n, NULL);
    CloseHandle(file);
    buffer[n] = 0;
    /* The log may be UTF-16 (FastMM5's choice of encoding): compare ASCII by dropping NULs. */
    DWORD k = 0;
    for (DWORD i = 0; i < n; i++)
        if (buffer[i])
            buffer[k++] = buffer[i];
    buffer[k] = 0;
    return strstr(buffer, text) != NULL;
}

static void extras(const wchar_t *folder)
{
    void *process = is_fm5 ? export_of("FastMM_ProcessAllPendingFrees") : NULL;
    void *scan = export_of("FastMM_ScanDebugBlocksForCorruption");
    void *log_state = export_of("FastMM_LogStateToFile");
    void *enter = export_of("FastMM_EnterMinimumAddressAlignment"), *leave = export_of("FastMM_ExitMinimumAddressAlignment");
    void *current = export_of("FastMM_GetCurrentMinimumAddressAlignment");
    void *set_default = export_of("FastMM_SetDefaultEventLogFilename"), *set_name = export_of("FastMM_SetEventLogFilename");
    void *get_name = export_of("FastMM_GetEventLogFilename"), *delete_log = export_of("FastMM_DeleteEventLogFile");
    void *get_mem = export_of("@Borlndmm@SysGetMem$qqri"), *free_mem = export_of("@Borlndmm@SysFreeMem$qqrpv");
    const char *set_names[3][2] = {{"FastMM_GetOutputDebugStringEvents", "FastMM_SetOutputDebugStringEvents"},
                                   {"FastMM_GetLogToFileEvents", "FastMM_SetLogToFileEvents"},
                                   {"FastMM_GetMessageBoxEvents", "FastMM_SetMessageBoxEvents"}};

    /* Exported by fm5 as BorlndMM.dpr lists it; FastMM5's precompiled 2022 DLL predates that line. */
    if (process && is_fm5)
        CHECK(BOOLEAN(CALL0(process)) == 1, "FastMM_ProcessAllPendingFrees answers True");
    if (scan)
        CHECK(scan_debug_blocks(scan) == 1, "FastMM_ScanDebugBlocksForCorruption on an intact heap answers True");

    if (enter && leave && current && get_mem && free_mem) {
        unsigned base = (unsigned)(uint8_t)CALL0(current);
        CHECK(base == (sizeof(void *) == 8 ? 1u : 0u), "the default minimum alignment is ordinal %u", base);
        CALL(enter, 3);
        CHECK((uint8_t)CALL0(current) == 3, "after Enter(maa64Bytes) the alignment is ordinal %u",
              (unsigned)(uint8_t)CALL0(current));
        for (size_t i = 0; i < SIZE_COUNT; i++) {
            void *p = (void *)CALL(get_mem, sizes[i]);
            CHECK(((uintptr_t)p & 63) == 0, "a %zu-byte block at %p under maa64Bytes", sizes[i], p);
            CALL(free_mem, (size_t)p);
        }
        CALL(leave, 3);
        CHECK((uint8_t)CALL0(current) == base, "Exit(maa64Bytes) restores ordinal %u", base);
    }

    if (set_name && get_name && set_default && delete_log) {
        wchar_t path[MAX_PATH];
        swprintf(path, MAX_PATH, L"%ls\\borlndmm_event_log.txt", folder);
        CALL(set_name, (size_t)path);
        const wchar_t *name = (const wchar_t *)CALL0(get_name);
        CHECK(name && wcscmp(name, path) == 0, "FastMM_GetEventLogFilename answers the name just set");
        HANDLE file = CreateFileW(path, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, 0, NULL);
        CloseHandle(file);
        CHECK(BOOLEAN(CALL0(delete_log)) == 1, "FastMM_DeleteEventLogFile deletes an existing log");
        CHECK(GetFileAttributesW(path) == INVALID_FILE_ATTRIBUTES, "the log is still there");
        CHECK(BOOLEAN(CALL0(delete_log)) == 0, "FastMM_DeleteEventLogFile of no file answers False");
        CALL0(set_default);
        name = (const wchar_t *)CALL0(get_name);
        size_t length = name ? wcslen(name) : 0;
        const wchar_t suffix[] = L"_MemoryManager_EventLog.txt";
        size_t suffix_length = sizeof suffix / sizeof suffix[0] - 1;
        CHECK(length > suffix_length && wcscmp(name + length - suffix_length, suffix) == 0,
              "the default event log name ends in %ls", suffix);
    }

    if (log_state && get_mem && free_mem && is_fm5) {
        wchar_t path[MAX_PATH];
        swprintf(path, MAX_PATH, L"%ls\\borlndmm_state.txt", folder);
        HANDLE file = CreateFileW(path, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, 0, NULL);
        DWORD written;
        WriteFile(file, "OLD CONTENT", 11, &written, NULL);
        CloseHandle(file);
        void *p = (void *)CALL(get_mem, 777);
        int ok = BOOLEAN(CALL(log_state, (size_t)path, (size_t)L"Extra details 4711", 1, 0, 50, 0, 0xFFFFFFFFu,
                              0xFFFFFFFFu, 0));
        CHECK(ok == 1, "FastMM_LogStateToFile answers True");
        CHECK(file_contains(path, "Extra details 4711") == 1, "the state log lacks the additional details");
        CHECK(file_contains(path, "OLD CONTENT") == 0, "ATruncateFile = True kept the old content");
        CALL(free_mem, (size_t)p);
        DeleteFileW(path);
    }

    for (int i = 0; i < 3; i++) {
        void *get = export_of(set_names[i][0]), *set = export_of(set_names[i][1]);
        if (!get || !set)
            continue;
        uint16_t saved = (uint16_t)CALL0(get);
        /* mmetDebugBlockDoubleFree (5), mmetDebugBlockHeaderCorruption (7), mmetDebugBlockModifiedAfterFree (9). */
        uint16_t chosen = (1u << 5) | (1u << 7) | (1u << 9);
        CALL(set, chosen);
        CHECK((uint16_t)CALL0(get) == chosen, "%s answers 0x%04x after setting 0x%04x", set_names[i][0],
              (unsigned)(uint16_t)CALL0(get), chosen);
        CALL(set, 0);
        CHECK((uint16_t)CALL0(get) == 0, "%s answers 0x%04x after setting []", set_names[i][0],
              (unsigned)(uint16_t)CALL0(get));
        CALL(set, saved);
    }
}

/* fm5 in debug mode: an overrun is found by the scan, which answers False (FastMM5 would raise). */
static void fm5_debug_scan(void)
{
    void *get_mem = export_of("@Borlndmm@SysGetMem$qqri"), *free_mem = export_of("@Borlndmm@SysFreeMem$qqrpv");
    void *scan = export_of("FastMM_ScanDebugBlocksForCorruption");
    void *set_log = export_of("FastMM_SetLogToFileEvents"), *set_debugger = export_of("FastMM_SetOutputDebugStringEvents");
    if (!get_mem || !free_mem || !scan || !set_log || !set_debugger)
        return;
    CALL(set_log, 0);
    CALL(set_debugger, 0);
    unsigned char *p = (unsigned char *)CALL(get_mem, 100);
    p[100] ^= 0xFF;
    CHECK(BOOLEAN(CALL(scan, 50)) == 0, "the scan missed a footer overrun");
    p[100] ^= 0xFF;
    CHECK(BOOLEAN(CALL(scan, 50)) == 1, "the scan after the repair answers False");
    CHECK((int)CALL(free_mem, (size_t)p) == 0, "SysFreeMem of the repaired block");
}

static void to_windows_path(const char *in, wchar_t *out, size_t capacity)
{
    size_t n = 0;
    if (in[0] == '/') {
        out[n++] = L'Z';
        out[n++] = L':';
    }
    for (; *in && n + 1 < capacity; in++)
        out[n++] = *in == '/' ? L'\\' : (wchar_t)(unsigned char)*in;
    out[n] = 0;
}

static int side_file(const wchar_t *dll_path)
{
    wchar_t folder[MAX_PATH], copy[MAX_PATH], marker[MAX_PATH];
    GetTempPathW(MAX_PATH, folder);
    wcscat(folder, L"fm5_borlndmm_side_file");
    CreateDirectoryW(folder, NULL);
    swprintf(copy, MAX_PATH, L"%ls\\BorlndMM.dll", folder);
    swprintf(marker, MAX_PATH, L"%ls\\BorlndMM.debug", folder);
    CHECK(CopyFileW(dll_path, copy, FALSE), "copying the DLL");
    HANDLE file = CreateFileW(marker, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, 0, NULL);
    CloseHandle(file);
    dll = LoadLibraryW(copy);
    if (CHECK(dll != NULL, "loading the copy beside BorlndMM.debug")) {
        is_fm5 = is_debug = 1;
        status_and_walk();
        fm5_debug_scan();
        FreeLibrary(dll);
    }
    DeleteFileW(marker);
    DeleteFileW(copy);
    RemoveDirectoryW(folder);
    return failures;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 3) {
        printf("usage: test_borlndmm DLL fm5|reference release|debug, or test_borlndmm DLL side-file\n");
        return 2;
    }
    wchar_t path[MAX_PATH];
    to_windows_path(argv[1], path, MAX_PATH);
    if (strcmp(argv[2], "side-file") == 0) {
        int result = side_file(path);
        printf("test_borlndmm side-file: %d failed\n", result);
        return result;
    }
    is_fm5 = strcmp(argv[2], "fm5") == 0;
    is_debug = argc > 3 && strcmp(argv[3], "debug") == 0;
    /* FastMM5's debug build finds its support DLL beside itself. */
    dll = LoadLibraryExW(path, NULL, LOAD_WITH_ALTERED_SEARCH_PATH);
    if (!dll) {
        printf("FAIL: cannot load %ls (error %lu)\n", path, GetLastError());
        return 1;
    }
    wchar_t folder[MAX_PATH];
    GetTempPathW(MAX_PATH, folder);
    size_t length = wcslen(folder);
    if (length && folder[length - 1] == L'\\')
        folder[length - 1] = 0;

    cdecl_trio();
    register_core();
    small_exports();
    status_and_walk();
    extras(folder);
    if (is_fm5 && is_debug)
        fm5_debug_scan();
    printf("test_borlndmm %s %s %s: %d failed\n", argv[1], argv[2], is_debug ? "debug" : "release", failures);
    return failures;
}
