/*
 * test_debug_reports — the text that debug mode and the leak machinery write to files:
 *   - FastMM_ReportMemoryLeaks in debug mode with the event log in a temp file: expected leaks by
 *     address and by size are left out, each leaked debug block has a detail entry (user size,
 *     allocation number as in its header, an "Allocated from:" trace naming this exe), an ordinary
 *     block has its own entry, and the summary counts the leaks by size;
 *   - the leak report at unload, in a child process (this program run again with --child) set up by
 *     FM5_DEBUG, FM5_STACK_DEPTH and FM5_LOG; FM5_LEAK_REPORT=0 turns it off; the child checks that
 *     the environment took effect and says so with its exit code;
 *   - FastMM_LogStateToFile: the first line's totals and the lines for this test's blocks;
 *   - FastMM_WalkBlocks on a debug block (user address, requested size, number and group);
 *   - the erase modes (allocated $90, freed $80) and their Begin/End counting.
 * Debug mode is left as it was found (counter 0).
 */
#include "test_util.h"

#define CHILD_DEPTH 8u
#define CHILD_BLOCK 321u
#define CHILD_EXIT_ENVIRONMENT_WRONG 3
#define CHILD_EXIT_ALLOCATION_FAILED 4

static char temp_folder[1024];

static void temp_file_name(char *out, size_t out_size, const char *what)
{
    snprintf(out, out_size, "%sfm5_debug_reports_%lu_%s.txt", temp_folder, (unsigned long)tu_process_id(), what);
}

/* The whole file, NUL-terminated, in CRT memory (never fm5's); NULL when it cannot be read. */
static char *read_whole_file(const char *path)
{
    return tu_read_file(path);
}

/* ---- the event log's entries -------------------------------------------------------------------- */

#define MAX_ENTRIES 64
#define STAMP_DASHES "--------------------------------"

typedef struct log_entries {
    char *text; /* the file, cut into entries in place */
    unsigned count;
    const char *entry[MAX_ENTRIES];
} log_entries;

/* Each entry is introduced by a "----<date time>----" line; the stamp lines are cut out. */
static int load_entries(log_entries *log, const char *path)
{
    memset(log, 0, sizeof *log);
    log->text = read_whole_file(path);
    if (!log->text)
        return 0;
    char *line = log->text;
    if (strncmp(line, "\xEF\xBB\xBF", 3) == 0) /* the UTF-8 mark that starts a new log */
        line += 3;
    while (*line) {
        char *next = line + strcspn(line, "\n");
        if (*next)
            next++;
        if (strncmp(line, STAMP_DASHES, strlen(STAMP_DASHES)) == 0) {
            *line = 0;
            if (log->count < MAX_ENTRIES)
                log->entry[log->count++] = next;
        }
        line = next;
    }
    return 1;
}

static void free_entries(log_entries *log)
{
    free(log->text);
    memset(log, 0, sizeof *log);
}

static unsigned count_entries_with(const log_entries *log, const char *needle)
{
    unsigned n = 0;
    for (unsigned i = 0; i < log->count; i++)
        n += strstr(log->entry[i], needle) != NULL;
    return n;
}

static const char *entry_with(const log_entries *log, const char *needle)
{
    for (unsigned i = 0; i < log->count; i++)
        if (strstr(log->entry[i], needle))
            return log->entry[i];
    return NULL;
}

static int contains_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *at = text ? strstr(text, line) : NULL; at; at = strstr(at + 1, line))
        if ((at == text || at[-1] == '\n') && (at[n] == '\r' || at[n] == '\n' || at[n] == 0))
            return 1;
    return 0;
}

static void lower_copy(char *dst, size_t dst_size, const char *src, size_t n)
{
    if (n >= dst_size)
        n = dst_size - 1;
    for (size_t i = 0; i < n; i++)
        dst[i] = (char)(src[i] >= 'A' && src[i] <= 'Z' ? src[i] + 32 : src[i]);
    dst[n] = 0;
}

typedef struct trace_facts {
    int found;           /* "Allocated from:" and "Dump of" are both there */
    unsigned lines;      /* trace lines between them */
    unsigned bad_lines;  /* lines not in the "    0x..." form */
    unsigned exe_lines;  /* lines naming test_debug_reports.exe+0x */
    unsigned in_range;   /* lines whose exe offset is in [start, start + 4096) */
} trace_facts;

static trace_facts read_allocation_trace(const char *entry, uintptr_t start)
{
#if TU_WINDOWS
    static const char module[] = "test_debug_reports.exe+0x";
#else
    static const char module[] = "test_debug_reports+0x";
#endif
    trace_facts facts = { 0, 0, 0, 0, 0 };
    const char *from = strstr(entry, "Allocated from:");
    const char *dump = from ? strstr(from, "Dump of") : NULL;
    if (!from || !dump)
        return facts;
    facts.found = 1;
    const char *line = strchr(from, '\n');
    while (line && ++line < dump) {
        size_t n = strcspn(line, "\r\n");
        char lowered[512];
        lower_copy(lowered, sizeof lowered, line, n);
        facts.lines++;
        if (strncmp(line, "    0x", 6) != 0)
            facts.bad_lines++;
        const char *at = strstr(lowered, module);
        if (at) {
            facts.exe_lines++;
            unsigned long long offset = strtoull(at + strlen(module), NULL, 16);
            if (start && offset >= start && offset < start + 4096)
                facts.in_range++;
        }
        line = strchr(line, '\n');
    }
    return facts;
}

/* ---- 1. leak report on request ----------------------------------------------------------------- */

/* Allocates three 100-byte blocks and writes to them: the calls are not tail calls, so this
 * function's own frame is on each block's allocation trace. */
static __attribute__((noinline)) unsigned allocate_three_hundreds(void **out)
{
    unsigned made = 0;
    for (int i = 0; i < 3; i++) {
        out[i] = FastMM_GetMem(100);
        if (out[i]) {
            memset(out[i], 0x30 + i, 100);
            made++;
        }
    }
    return made;
}

typedef struct walk_order {
    const void *first;
    const void *second;
    int first_index;  /* position in the walk, -1 if not seen */
    int second_index;
    int position;
} walk_order;

static int FM5_CALL walk_order_callback(const FastMM_WalkBlockInfo *info, void *user)
{
    walk_order *w = (walk_order *)user;
    if (info->Address == w->first)
        w->first_index = w->position;
    if (info->Address == w->second)
        w->second_index = w->position;
    w->position++;
    return 0;
}

/* Whether the leak report's walk (FastMM_WalkBlocks walks in the same order) meets `a` before `b`. */
static int walked_before(const void *a, const void *b)
{
    walk_order w = { a, b, -1, -1, 0 };
    FastMM_WalkBlocks(walk_order_callback, &w, TU_BLOCK_KINDS, 1, 10000);
    return w.first_index >= 0 && w.second_index >= 0 && w.first_index < w.second_index;
}

static void check_leak_entry(const log_entries *log, const void *p, size_t size, uintptr_t function_start)
{
    char pointer[40];
    snprintf(pointer, sizeof pointer, "Pointer: 0x%0*llX", (int)(2 * sizeof(void *)), (unsigned long long)(uintptr_t)p);
    const char *entry = NULL;
    unsigned matches = 0;
    for (unsigned i = 0; i < log->count; i++) {
        char lowered_entry[128], lowered_pointer[40];
        lower_copy(lowered_entry, sizeof lowered_entry, log->entry[i], strcspn(log->entry[i], "\r\n"));
        lower_copy(lowered_pointer, sizeof lowered_pointer, pointer, strlen(pointer));
        if (strstr(lowered_entry, "memory leak: the block was never freed") && strstr(lowered_entry, lowered_pointer)) {
            entry = log->entry[i];
            matches++;
        }
    }
    if (!CHECK_MSG(matches == 1, "%u leak entries for the %zu-byte debug block %p (\"%s\")", matches, size, p,
                   pointer))
        return;
    unsigned number = tu_debug_header_u32(p, TU_DEBUG_NUMBER_OFFSET);
    char expect[128];
    snprintf(expect, sizeof expect, "Block: user size %zu, allocation number %u,", size, number);
    CHECK_MSG(strstr(entry, expect) != NULL, "the entry lacks \"%s\": \"%.500s\"", expect, entry);
    trace_facts t = read_allocation_trace(entry, function_start);
    if (CHECK_MSG(t.found, "no \"Allocated from:\" ... \"Dump of\" section: \"%.600s\"", entry)) {
        CHECK_MSG(t.lines >= 1 && t.bad_lines == 0, "%u trace lines, %u malformed: \"%.900s\"", t.lines, t.bad_lines,
                  entry);
        CHECK_MSG(t.exe_lines >= 1, "no trace line names test_debug_reports.exe: \"%.900s\"", entry);
        if (function_start)
            CHECK_MSG(t.in_range >= 1, "no trace line inside allocate_three_hundreds (exe offset 0x%llx): \"%.900s\"",
                      (unsigned long long)function_start, entry);
    }
}

static void leak_report_on_request(void)
{
    SECTION("FastMM_ReportMemoryLeaks in debug mode, logged to a file");
    char path[1024 + 64];
    temp_file_name(path, sizeof path, "leaks");
    FastMM_SetLogToFileEvents(0);
    FastMM_SetOutputDebugStringEvents(0);
    size_t baseline = FastMM_ReportMemoryLeaks();
    /* This program holds no fm5 block of its own (its CRT heap is msvcrt's). */
    CHECK_EQ_SIZE(baseline, 0);
    CHECK_EQ_INT(FastMM_SetEventLogFilename(path), 0);
    tu_delete_file(path);
    FastMM_SetLogToFileEvents(1u << FastMM_EventMemoryLeak);
    CHECK_EQ_INT(FastMM_GetLogToFileEvents(), 1u << FastMM_EventMemoryLeak);

    void *ordinary = FastMM_GetMem(24);
    CHECK(ordinary != NULL && !tu_is_debug_block(ordinary));
    size_t ordinary_usable = FastMM_BlockMaximumUserBytes(ordinary);
    CHECK(ordinary_usable >= 24 && ordinary_usable != 100 && ordinary_usable != 70000);

    CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
    void *hundred[3] = { NULL, NULL, NULL };
    CHECK_EQ_INT(allocate_three_hundreds(hundred), 3);
    void *b5000 = FastMM_GetMem(5000);
    void *b70000 = FastMM_GetMem(70000);
    /* The by-size entry (4000, 1) goes to the first block of 4000 bytes or more that the report meets:
     * the 5000-byte block must come before the 70000-byte one in the walk. */
    if (b5000 && b70000 && !walked_before(b5000, b70000)) {
        void *again70000 = FastMM_GetMem(70000);
        void *again5000 = FastMM_GetMem(5000);
        FastMM_FreeMem(b5000);
        FastMM_FreeMem(b70000);
        b5000 = again5000;
        b70000 = again70000;
    }
    CHECK(b5000 != NULL && b70000 != NULL && tu_is_debug_block(b5000) && tu_is_debug_block(b70000));
    CHECK_MSG(walked_before(b5000, b70000), "the 5000-byte block %p is not walked before the 70000-byte %p", b5000,
              b70000);
    for (int i = 0; i < 3; i++)
        CHECK(hundred[i] && tu_is_debug_block(hundred[i]) && tu_debug_user_size(hundred[i]) == 100);

    CHECK_EQ_INT(FastMM_RegisterExpectedMemoryLeak(hundred[0]), 0);
    CHECK_EQ_INT(FastMM_RegisterExpectedMemoryLeakBySize(4000, 1), 0);

    size_t leaks = FastMM_ReportMemoryLeaks();
    CHECK_EQ_SIZE(leaks, baseline + 4);

    log_entries log;
    if (CHECK_MSG(load_entries(&log, path), "cannot read %s", path)) {
        CHECK_EQ_INT(log.count, 5); /* four leaks and the summary */
        CHECK_EQ_INT(count_entries_with(&log, "user size 100,"), 2);
        CHECK_EQ_INT(count_entries_with(&log, "user size 70000,"), 1);
        CHECK_EQ_INT(count_entries_with(&log, "user size 5000,"), 0);
        CHECK_EQ_INT(count_entries_with(&log, "a block allocated outside debug mode was never freed"), 1);
        uintptr_t start = (uintptr_t)(void *)allocate_three_hundreds - tu_program_base();
        check_leak_entry(&log, hundred[1], 100, start);
        check_leak_entry(&log, hundred[2], 100, start);
        check_leak_entry(&log, b70000, 70000, 0);
        char expected_number[64];
        snprintf(expected_number, sizeof expected_number, "allocation number %u,",
                 tu_debug_header_u32(hundred[0], TU_DEBUG_NUMBER_OFFSET));
        CHECK_EQ_INT(count_entries_with(&log, expected_number), 0);
        snprintf(expected_number, sizeof expected_number, "allocation number %u,",
                 tu_debug_header_u32(b5000, TU_DEBUG_NUMBER_OFFSET));
        CHECK_EQ_INT(count_entries_with(&log, expected_number), 0);

        char line[96];
        snprintf(line, sizeof line, "fm5: Memory leak: %zu blocks were never freed.", baseline + 4);
        const char *summary = entry_with(&log, line);
        if (CHECK_MSG(summary != NULL, "no entry \"%s\" in %s", line, path)) {
            CHECK(contains_line(summary, "Leaked blocks by size:"));
            CHECK(contains_line(summary, "    100 bytes: 2"));
            CHECK(contains_line(summary, "    70000 bytes: 1"));
            snprintf(line, sizeof line, "    %zu bytes: 1", ordinary_usable);
            CHECK_MSG(contains_line(summary, line), "no line \"%s\": \"%.600s\"", line, summary);
            CHECK_MSG(strstr(summary, "    5000 bytes") == NULL, "the 5000-byte block is counted: \"%.600s\"", summary);
        }
        free_entries(&log);
    }

    /* Without the address entry, the first 100-byte block is a leak too. */
    CHECK_EQ_INT(FastMM_UnregisterExpectedMemoryLeak(hundred[0]), 0);
    CHECK_EQ_INT(FastMM_UnregisterExpectedMemoryLeak(hundred[0]), -1);
    CHECK_EQ_INT(FastMM_DeleteEventLogFile(), 1);
    CHECK_EQ_SIZE(FastMM_ReportMemoryLeaks(), baseline + 5);
    if (CHECK_MSG(load_entries(&log, path), "cannot read %s", path)) {
        CHECK_EQ_INT(count_entries_with(&log, "user size 100,"), 3);
        const char *summary = entry_with(&log, "fm5: Memory leak: 5 blocks were never freed.");
        CHECK(summary != NULL && contains_line(summary, "    100 bytes: 3"));
        free_entries(&log);
    }

    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(FastMM_FreeMem(hundred[i]), 0);
    CHECK_EQ_INT(FastMM_FreeMem(b5000), 0);
    CHECK_EQ_INT(FastMM_FreeMem(b70000), 0);
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
    CHECK_EQ_INT(FastMM_FreeMem(ordinary), 0);
    CHECK_EQ_INT(FastMM_UnregisterExpectedMemoryLeakBySize(4000, 1), 0);
    CHECK_EQ_INT(FastMM_DeleteEventLogFile(), 1);
    CHECK_EQ_SIZE(FastMM_ReportMemoryLeaks(), baseline);
    CHECK_MSG(!tu_file_exists(path), "a report without leaks wrote %s", path);

    FastMM_SetLogToFileEvents(0);
    FastMM_SetEventLogFilename(NULL);
    tu_delete_file(path);
}

/* ---- 2 and 3. leak report at unload, in a child process ----------------------------------------- */

/* Run as "test_debug_reports.exe --child <log path>": checks the environment's settings, allocates
 * two blocks and returns from main without freeing them. */
static int child_main(const char *log_path)
{
    tu_no_crash_dialogs();
    const char *name = FastMM_GetEventLogFilename();
    if (FastMM_DebugModeActive() != 1 || FastMM_GetDebugModeStackTraceEntryCount() != CHILD_DEPTH || !name ||
        strcmp(name, log_path) != 0)
        return CHILD_EXIT_ENVIRONMENT_WRONG;
    void *a = FastMM_GetMem(CHILD_BLOCK);
    void *b = FastMM_GetMem(CHILD_BLOCK);
    if (!a || !b)
        return CHILD_EXIT_ALLOCATION_FAILED;
    memset(a, 1, CHILD_BLOCK);
    memset(b, 2, CHILD_BLOCK);
    return 0;
}

/* Runs the child with the FM5_ variables set (leak_report: NULL leaves FM5_LEAK_REPORT unset);
 * returns its exit code, or -1 when it could not be run or did not end within 30 s. */
static long run_child(const char *log_path, const char *leak_report)
{
    char depth[16];
    snprintf(depth, sizeof depth, "%u", CHILD_DEPTH);
    tu_setenv("FM5_DEBUG", "1");
    tu_setenv("FM5_STACK_DEPTH", depth);
    tu_setenv("FM5_LOG", log_path);
    tu_setenv("FM5_LEAK_REPORT", leak_report);
    const char *const arguments[] = { "--child", log_path, NULL };
    long result = tu_run_self(arguments, NULL, 30000);
    tu_setenv("FM5_DEBUG", NULL);
    tu_setenv("FM5_STACK_DEPTH", NULL);
    tu_setenv("FM5_LOG", NULL);
    tu_setenv("FM5_LEAK_REPORT", NULL);
    CHECK_MSG(result >= 0, "the child could not be run or did not end within 30 s");
    return result;
}

static void leak_report_at_unload(void)
{
    SECTION("leak report at unload: a child run with FM5_DEBUG=1 FM5_STACK_DEPTH=8 FM5_LOG=<temp file>");
    char path[1024 + 64];
    temp_file_name(path, sizeof path, "child");
    tu_delete_file(path);
    long code = run_child(path, NULL);
    CHECK_MSG(code == 0, "child exit code %ld (%d: the environment did not take effect, %d: GetMem failed)", code,
              CHILD_EXIT_ENVIRONMENT_WRONG, CHILD_EXIT_ALLOCATION_FAILED);
    log_entries log;
    if (CHECK_MSG(load_entries(&log, path), "the child wrote no log %s", path)) {
        const char *summary = entry_with(&log, "Memory leak: 2 blocks were never freed.");
        if (CHECK_MSG(summary != NULL, "no leak summary in %s (%u entries)", path, log.count))
            CHECK_MSG(contains_line(summary, "    321 bytes: 2"), "summary: \"%.500s\"", summary);
        char expect[64];
        snprintf(expect, sizeof expect, "Block: user size %u,", CHILD_BLOCK);
        CHECK_EQ_INT(count_entries_with(&log, expect), 2);
        unsigned checked = 0;
        for (unsigned i = 0; i < log.count; i++) {
            if (!strstr(log.entry[i], expect))
                continue;
            trace_facts t = read_allocation_trace(log.entry[i], 0);
            CHECK_MSG(t.found && t.lines >= 1 && t.lines <= CHILD_DEPTH && t.bad_lines == 0,
                      "%u trace lines (%u malformed), at most %u expected: \"%.900s\"", t.lines, t.bad_lines,
                      CHILD_DEPTH, log.entry[i]);
            CHECK_MSG(t.exe_lines >= 1, "no trace line names test_debug_reports.exe: \"%.900s\"", log.entry[i]);
            checked++;
        }
        CHECK_EQ_INT(checked, 2);
        free_entries(&log);
    }
    tu_delete_file(path);

    SECTION("no leak report at unload with FM5_LEAK_REPORT=0");
    temp_file_name(path, sizeof path, "child_quiet");
    tu_delete_file(path);
    code = run_child(path, "0");
    CHECK_MSG(code == 0, "child exit code %ld", code);
    char *text = read_whole_file(path);
    CHECK_MSG(!text || !strstr(text, "Memory leak"), "%s has a leak entry: \"%.500s\"", path, text ? text : "");
    free(text);
    tu_delete_file(path);

    char value[8];
    CHECK(tu_getenv("FM5_DEBUG", value, sizeof value) == 0);
    CHECK(tu_getenv("FM5_LOG", value, sizeof value) == 0);
}

/* ---- 4. FastMM_LogStateToFile ------------------------------------------------------------------ */

typedef struct state_tally {
    size_t blocks;
    size_t bytes;
    size_t sizes[3];
    size_t counts[3];
} state_tally;

static int FM5_CALL state_tally_callback(const FastMM_WalkBlockInfo *info, void *user)
{
    state_tally *t = (state_tally *)user;
    t->blocks++;
    t->bytes += info->UsableSize;
    for (int i = 0; i < 3; i++)
        if (info->UsableSize == t->sizes[i])
            t->counts[i]++;
    return 0;
}

static void log_state_to_file(void)
{
    SECTION("FastMM_LogStateToFile");
    char path[1024 + 64];
    temp_file_name(path, sizeof path, "state");
    tu_delete_file(path);
    void *small[5], *medium[2];
    for (int i = 0; i < 5; i++)
        small[i] = FastMM_GetMem(100);
    for (int i = 0; i < 2; i++)
        medium[i] = FastMM_GetMem(3000);
    CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
    void *debug = FastMM_GetMem(777);
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
    int ok = CHECK(debug != NULL && tu_is_debug_block(debug));
    for (int i = 0; i < 5; i++)
        ok &= CHECK(small[i] != NULL);
    for (int i = 0; i < 2; i++)
        ok &= CHECK(medium[i] != NULL);
    if (ok) {
        state_tally t;
        memset(&t, 0, sizeof t);
        t.sizes[0] = FastMM_BlockMaximumUserBytes(small[0]);
        t.sizes[1] = FastMM_BlockMaximumUserBytes(medium[0]);
        t.sizes[2] = 777;
        tu_info("usable sizes: 100 -> %zu, 3000 -> %zu", t.sizes[0], t.sizes[1]);
        CHECK(t.sizes[0] >= 100 && t.sizes[0] < 3000 && t.sizes[1] >= 3000 && t.sizes[1] != 777);
        CHECK(FastMM_WalkBlocks(state_tally_callback, &t, TU_BLOCK_KINDS, 1, 10000) == 1);
        CHECK_EQ_INT(FastMM_LogStateToFile(path), 0);
        char *text = read_whole_file(path);
        if (CHECK_MSG(text != NULL, "cannot read %s", path)) {
            char line[160];
            snprintf(line, sizeof line, "fm5 memory manager state: %zu live blocks, %zu bytes in use, ", t.blocks,
                     t.bytes);
            CHECK_MSG(strncmp(text, line, strlen(line)) == 0, "first line \"%.*s\", expected \"%s...\"",
                      (int)strcspn(text, "\r\n"), text, line);
            CHECK(t.counts[0] >= 5 && t.counts[1] >= 2 && t.counts[2] >= 1);
            for (int i = 0; i < 3; i++) {
                snprintf(line, sizeof line, "%zu bytes: %zu x %zu bytes", t.sizes[i] * t.counts[i], t.counts[i],
                         t.sizes[i]);
                CHECK_MSG(contains_line(text, line), "no line \"%s\" in \"%.800s\"", line, text);
            }
            /* The debug block counts its requested size, not its outer block's. */
            CHECK_MSG(contains_line(text, "777 bytes: 1 x 777 bytes") || t.counts[2] != 1, "\"%.800s\"", text);
            free(text);
        }
        /* Appending: a second log adds a second state. */
        CHECK_EQ_INT(FastMM_LogStateToFile(path), 0);
        text = read_whole_file(path);
        unsigned states = 0;
        for (const char *at = text ? strstr(text, "fm5 memory manager state: ") : NULL; at;
             at = strstr(at + 1, "fm5 memory manager state: "))
            states++;
        CHECK_EQ_INT(states, 2);
        free(text);
    }
    for (int i = 0; i < 5; i++)
        if (small[i])
            CHECK_EQ_INT(FastMM_FreeMem(small[i]), 0);
    for (int i = 0; i < 2; i++)
        if (medium[i])
            CHECK_EQ_INT(FastMM_FreeMem(medium[i]), 0);
    if (debug)
        CHECK_EQ_INT(FastMM_FreeMem(debug), 0);
    tu_delete_file(path);
}

/* ---- 5. WalkBlocks on debug blocks ------------------------------------------------------------- */

static void walk_debug_info(void)
{
    SECTION("FastMM_WalkBlocks: debug block fields");
    void *ordinary = FastMM_GetMem(1234);
    CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
    unsigned old_group = FastMM_GetCurrentAllocationGroup();
    FastMM_SetCurrentAllocationGroup(77);
    CHECK_EQ_INT(FastMM_GetCurrentAllocationGroup(), 77);
    void *debug = FastMM_GetMem(1234);
    FastMM_SetCurrentAllocationGroup(old_group);
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
    if (CHECK(debug != NULL && ordinary != NULL && tu_is_debug_block(debug))) {
        tu_walk w;
        tu_walk_take(&w, TU_BLOCK_KINDS, 1);
        CHECK_EQ_INT(w.result, 1);
        const FastMM_WalkBlockInfo *d = tu_walk_find(&w, debug);
        if (CHECK_MSG(d != NULL, "the debug block %p is not in the walk", debug)) {
            CHECK_EQ_PTR(d->Address, debug);
            CHECK_EQ_INT(d->IsDebugBlock, 1);
            CHECK_EQ_SIZE(d->UsableSize, 1234);
            CHECK_EQ_INT(d->IsFree, 0);
            CHECK_EQ_INT(d->AllocationNumber, tu_debug_header_u32(debug, TU_DEBUG_NUMBER_OFFSET));
            CHECK(d->AllocationNumber != 0 && d->AllocationNumber <= FastMM_GetLastAllocationNumber());
            CHECK_EQ_INT(d->AllocationGroup, 77);
            CHECK_EQ_INT(tu_debug_header_u32(debug, TU_DEBUG_GROUP_OFFSET), 77);
            CHECK(d->BlockSize > 1234 + TU_DEBUG_HEADER_SIZE);
        }
        const FastMM_WalkBlockInfo *o = tu_walk_find(&w, ordinary);
        if (CHECK_MSG(o != NULL, "the ordinary block %p is not in the walk", ordinary)) {
            CHECK_EQ_INT(o->IsDebugBlock, 0);
            CHECK_EQ_INT(o->AllocationNumber, 0);
            CHECK_EQ_INT(o->AllocationGroup, 0);
            CHECK_EQ_SIZE(o->UsableSize, FastMM_BlockMaximumUserBytes(ordinary));
        }
        tu_walk_free(&w);
    }
    if (debug)
        CHECK_EQ_INT(FastMM_FreeMem(debug), 0);
    if (ordinary)
        CHECK_EQ_INT(FastMM_FreeMem(ordinary), 0);
}

/* ---- 6. erase modes ---------------------------------------------------------------------------- */

static void erase_modes(void)
{
    SECTION("erase modes");
    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);
    CHECK_EQ_INT(FastMM_EraseAllocatedBlockContentActive(), 0);
    CHECK_EQ_INT(FastMM_EraseFreedBlockContentActive(), 0);
    CHECK_EQ_INT(FastMM_EndEraseAllocatedBlockContent(), -1);
    CHECK_EQ_INT(FastMM_EndEraseFreedBlockContent(), -1);

    /* A block dirtied and freed first, so that the one handed out next (most likely the same) has
     * something for the erase to overwrite. */
    void *dirty = FastMM_GetMem(50);
    if (dirty) {
        memset(dirty, 0x11, FastMM_BlockMaximumUserBytes(dirty));
        FastMM_FreeMem(dirty);
    }
    FastMM_BeginEraseAllocatedBlockContent();
    CHECK_EQ_INT(FastMM_EraseAllocatedBlockContentActive(), 1);
    uint8_t *p = (uint8_t *)FastMM_GetMem(50);
    if (CHECK(p != NULL)) {
        size_t usable = FastMM_BlockMaximumUserBytes(p);
        size_t bad = 0;
        CHECK(usable >= 50 && !tu_is_debug_block(p));
        CHECK_MSG(tu_all_bytes_equal(p, usable, 0x90, &bad), "byte %zu of %zu is 0x%02x (block %p, dirty one %p)", bad,
                  usable, p[bad], (void *)p, dirty);
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    }
    FastMM_BeginEraseAllocatedBlockContent();
    FastMM_BeginEraseAllocatedBlockContent();
    CHECK_EQ_INT(FastMM_EndEraseAllocatedBlockContent(), 0);
    CHECK_EQ_INT(FastMM_EraseAllocatedBlockContentActive(), 1);
    CHECK_EQ_INT(FastMM_EndEraseAllocatedBlockContent(), 0);
    CHECK_EQ_INT(FastMM_EraseAllocatedBlockContentActive(), 1);
    CHECK_EQ_INT(FastMM_EndEraseAllocatedBlockContent(), 0);
    CHECK_EQ_INT(FastMM_EraseAllocatedBlockContentActive(), 0);
    CHECK_EQ_INT(FastMM_EndEraseAllocatedBlockContent(), -1);
    CHECK_EQ_INT(FastMM_EraseAllocatedBlockContentActive(), 0);

    uint8_t *q = (uint8_t *)FastMM_GetMem(50);
    if (CHECK(q != NULL)) {
        size_t usable = FastMM_BlockMaximumUserBytes(q);
        memset(q, 0x11, usable);
        FastMM_BeginEraseFreedBlockContent();
        CHECK_EQ_INT(FastMM_EraseFreedBlockContentActive(), 1);
        CHECK_EQ_INT(FastMM_FreeMem(q), 0);
        /* The span stays committed: the freed block can still be read. Its first word may hold the
         * free-list link. */
        size_t bad = 0;
        CHECK_MSG(tu_all_bytes_equal(q + sizeof(void *), usable - sizeof(void *), 0x80, &bad),
                  "freed byte %zu of %zu is 0x%02x", bad + sizeof(void *), usable, q[bad + sizeof(void *)]);
        CHECK_EQ_INT(FastMM_EndEraseFreedBlockContent(), 0);
        CHECK_EQ_INT(FastMM_EraseFreedBlockContentActive(), 0);
        CHECK_EQ_INT(FastMM_EndEraseFreedBlockContent(), -1);
    }
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--child") == 0)
        return child_main(argv[2]);
    tu_init("test_debug_reports");
    tu_temp_folder(temp_folder, sizeof temp_folder);
    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);

    leak_report_on_request();
    leak_report_at_unload();
    log_state_to_file();
    walk_debug_info();
    erase_modes();

    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);
    CHECK_EQ_INT(FastMM_GetCurrentAllocationGroup(), 0);
    return test_finish();
}
