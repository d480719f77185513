/* BorlndMM.dll: fm5 behind the exports of the borlndmm.dll that Delphi and C++Builder programs built
 * with runtime packages load, with the export set of FastMM5's replacement DLL (its BorlndMM.dpr).
 *
 * Built from fm5_static: the same sources as fm5_NN.dll, one heap per process whichever DLL a module
 * loads (the two do not share one heap unless a module asks for sharing, api/sharing.h).
 *
 * Conventions: GetMemory, FreeMemory and ReallocMemory are cdecl (System.pas declares them so); every
 * other export is Delphi's default convention, which on Win32 is "register" (borlndmm/
 * register_exports_32.asm and asm/delphi/ hold the thunks; these C functions are what they call) and on
 * Win64 the platform's, so there the C functions are the exports. Records come back through a hidden
 * pointer: on Win32 after the declared arguments, on Win64 first (the Microsoft x64 rule), which is
 * why the record functions below take it where Win64 passes it and the Win32 thunks reorder.
 *
 * Debug mode: the same DLL enters fm5's debug mode at load (with the leak report at unload) when
 * FM5_DEBUG=1 is set, or when a file named BorlndMM.debug lies beside the DLL. fm5's stack traces are
 * built in, so no support DLL is needed. */
#include "fm5.h"
#include "api/startup.h"
#include "api/delphi_interface.h"
#include "base/platform.h"
#include "debug/debug_block_layout.h"
#include <windows.h>
#include <string.h>

#define BMM_EXPORT FM5_CALL

/* ---- Records of the Delphi RTL and of FastMM5's interface ------------------------------------- */

/* System.THeapStatus: nine NativeUInt and a Cardinal. */
typedef struct delphi_heap_status {
    size_t TotalAddrSpace, TotalUncommitted, TotalCommitted, TotalAllocated, TotalFree;
    size_t FreeSmall, FreeBig, Unused, Overhead;
    uint32_t HeapErrorCode;
} delphi_heap_status;
_Static_assert(sizeof(delphi_heap_status) == (FM5_POINTER_SIZE == 4 ? 40 : 80), "THeapStatus's size");

/* TFastMM_UsageSummary. */
typedef struct delphi_usage_summary {
    size_t AllocatedBytes, OverheadBytes;
    double EfficiencyPercentage;
} delphi_usage_summary;
_Static_assert(sizeof(delphi_usage_summary) == (FM5_POINTER_SIZE == 4 ? 16 : 24), "TFastMM_UsageSummary's size");

/* TFastMM_WalkAllocatedBlocks_BlockInfo, Delphi's default record alignment (each field at a multiple
 * of its size, up to 8). */
typedef struct delphi_walk_block_info {
    void *BlockAddress;
    void *DebugInformation;          /* the debug block header (FastMM5's layout, which fm5 keeps), or NULL */
    ptrdiff_t BlockSize;
    ptrdiff_t UsableSize;
    void *UserData;
    uint8_t ArenaIndex;
    uint8_t BlockType;               /* TFastMM_WalkAllocatedBlocksBlockType */
    uint8_t BlockIsFree;
    uint8_t IsSequentialFeedMediumBlockSpan;
    int32_t MediumBlockSequentialFeedSpanUnusedBytes;
    uint8_t IsSequentialFeedSmallBlockSpan;
    uint16_t SmallBlockSpanBlockSize;
    int32_t SmallBlockSequentialFeedSpanUnusedBytes;
} delphi_walk_block_info;
_Static_assert(offsetof(delphi_walk_block_info, ArenaIndex) == 5 * FM5_POINTER_SIZE, "BlockInfo layout");
_Static_assert(offsetof(delphi_walk_block_info, MediumBlockSequentialFeedSpanUnusedBytes) == 5 * FM5_POINTER_SIZE + 4,
               "BlockInfo layout");
_Static_assert(offsetof(delphi_walk_block_info, SmallBlockSpanBlockSize) == 5 * FM5_POINTER_SIZE + 10,
               "BlockInfo layout");
_Static_assert(sizeof(delphi_walk_block_info) == (FM5_POINTER_SIZE == 4 ? 36 : 56), "BlockInfo's size");

/* TFastMM_WalkAllocatedBlocksBlockType's ordinals and the fm5 kinds they name. */
enum { BT_LARGE_BLOCK, BT_MEDIUM_BLOCK_SPAN, BT_MEDIUM_BLOCK, BT_SMALL_BLOCK_SPAN, BT_SMALL_BLOCK, BT_COUNT };
static const unsigned block_type_kinds[BT_COUNT] = {
    FastMM_LargeBlock, FastMM_MediumBlockSpan, FastMM_MediumBlock, FastMM_SmallBlockSpan, FastMM_SmallBlock,
};

/* TFastMM_MemoryManagerEventType's ordinals and the fm5 event kind each stands for (0: none). The
 * two installation events cannot happen to a DLL that is the memory manager; both leak events are
 * fm5's FastMM_EventMemoryLeak. fm5's other kinds (invalid pointers, out of memory, ...) have no
 * ordinal and keep their settings whatever a set says. */
#define DELPHI_EVENT_TYPE_COUNT 11
static const int event_type_kinds[DELPHI_EVENT_TYPE_COUNT] = {
    0, 0, FastMM_EventCannotSwitchWithLivePointers, FastMM_EventMemoryLeak, FastMM_EventMemoryLeak,
    FastMM_EventDoubleFree, FastMM_EventReallocOfFreedBlock, FastMM_EventDebugBlockHeaderCorrupted,
    FastMM_EventDebugBlockFooterCorrupted, FastMM_EventFreedBlockModified, FastMM_EventVirtualCallOnFreedObject,
};

/* ---- The cdecl trio: System.GetMemory, FreeMemory, ReallocMemory -------------------------------- */

FM5_TAIL_ONLY void *BMM_EXPORT bmm_GetMemory(ptrdiff_t size)
{
    return FastMM_GetMem((size_t)size);
}

/* System.FreeMemory answers 0 for nil without calling the manager. */
FM5_TAIL_ONLY int BMM_EXPORT bmm_FreeMemory(void *p)
{
    return p ? FastMM_FreeMem(p) : 0;
}

/* System.ReallocMemory allocates for nil. */
FM5_TAIL_ONLY void *BMM_EXPORT bmm_ReallocMemory(void *p, ptrdiff_t size)
{
    return p ? FastMM_ReallocMem(p, (size_t)size) : FastMM_GetMem((size_t)size);
}

/* ---- borlndmm.dll's own functions ---------------------------------------------------------------- */

/* As in FastMM5's DLL: the RTL's counters are not kept, DumpBlocks does nothing and the reference
 * counting of the heap is not needed (the heap lives as long as the process). */
int BMM_EXPORT bmm_GetAllocMemCount(void)
{
    return 0;
}

int BMM_EXPORT bmm_GetAllocMemSize(void)
{
    return 0;
}

void BMM_EXPORT bmm_DumpBlocks(void)
{
}

int BMM_EXPORT bmm_HeapReferenceCount(void)
{
    return 2;
}

/* GetHeapStatus: THeapStatus through the hidden pointer (the only argument). */
delphi_heap_status *BMM_EXPORT bmm_GetHeapStatus(delphi_heap_status *result)
{
    FastMM_HeapStatus status;
    FastMM_GetHeapStatus(&status, 50);
    delphi_heap_status out = {
        status.TotalAddrSpace, status.TotalUncommitted, status.TotalCommitted, status.TotalAllocated,
        status.TotalFree, status.FreeSmall, status.FreeBig, status.Unused, status.Overhead, 0,
    };
    *result = out;
    return result;
}

/* ---- FastMM_* extras, with FastMM5's Pascal signatures ------------------------------------------ */

struct walk_context {
    const void *callback;
    void *user_data;
    uint32_t minimum_group, maximum_group;
};

static int FM5_CALL walk_one_block(const FastMM_WalkBlockInfo *block, void *user)
{
    const struct walk_context *context = user;
    if (block->AllocationGroup < context->minimum_group || block->AllocationGroup > context->maximum_group)
        return 0;
    delphi_walk_block_info info;
    memset(&info, 0, sizeof info);
    info.BlockAddress = block->Address;
    info.DebugInformation = block->IsDebugBlock ? (char *)block->Address - FM5_DEBUG_HEADER_SIZE : NULL;
    info.BlockSize = (ptrdiff_t)block->BlockSize;
    info.UsableSize = (ptrdiff_t)block->UsableSize;
    info.UserData = context->user_data;
    info.ArenaIndex = (uint8_t)block->Arena;
    for (unsigned type = 0; type < BT_COUNT; type++)
        if (block_type_kinds[type] == block->Kind)
            info.BlockType = (uint8_t)type;
    info.BlockIsFree = block->IsFree != 0;
    /* procedure(const ABlockInfo: TFastMM_WalkAllocatedBlocks_BlockInfo): a record this size goes by
     * reference, in EAX on Win32 and RCX on Win64. */
    fm5_delphi_call1(context->callback, (size_t)&info);
    return 0;
}

/* FastMM_WalkBlocks(ACallBack, AWalkBlockTypes: set of 5 (a byte), AWalkUsedBlocksOnly: Boolean,
 * AUserData, ALockTimeoutMilliseconds, AMinimumAllocationGroup, AMaximumAllocationGroup): Boolean. */
int BMM_EXPORT bmm_WalkBlocks(const void *callback, uint32_t block_types, uint32_t used_only, void *user_data,
                              uint32_t timeout_ms, uint32_t minimum_group, uint32_t maximum_group)
{
    if (!callback)
        return 0;
    unsigned kinds = 0;
    for (unsigned type = 0; type < BT_COUNT; type++)
        if (block_types & (1u << type))
            kinds |= block_type_kinds[type];
    struct walk_context context = {callback, user_data, minimum_group, maximum_group};
    return FastMM_WalkBlocks(walk_one_block, &context, kinds, (used_only & 0xFF) != 0, timeout_ms) == 1;
}

/* fm5 processes what it can whatever the answer; the Boolean says whether every manager was reached. */
int BMM_EXPORT bmm_ProcessAllPendingFrees(void)
{
    return FastMM_ProcessAllPendingFrees() == 1;
}

/* FastMM5 raises EInvalidPointer on corruption; a DLL cannot raise a Delphi exception its caller would
 * recognise, so this answers False instead (and the corruption is logged as events, as in FastMM5). */
int BMM_EXPORT bmm_ScanDebugBlocksForCorruption(uint32_t timeout_ms)
{
    (void)timeout_ms;
    return FastMM_ScanDebugBlocksForCorruption() == 1;
}

/* FastMM_GetUsageSummary(ALockTimeoutMilliseconds): TFastMM_UsageSummary. */
delphi_usage_summary *BMM_EXPORT bmm_GetUsageSummary(delphi_usage_summary *result, uint32_t timeout_ms)
{
    (void)timeout_ms;
    FastMM_UsageSummary summary;
    FastMM_GetUsageSummary(&summary);
    delphi_usage_summary out = {summary.AllocatedBytes, summary.OverheadBytes, summary.EfficiencyPercentage};
    *result = out;
    return result;
}

/* A UTF-16 string as UTF-8 in `out` (capacity bytes); 0 when it does not fit or is not valid. */
static int utf16_to_utf8(const wchar_t *text, char *out, int capacity)
{
    int length = WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, text, -1, out, capacity, NULL, NULL);
    return length > 0;
}

/* FastMM_LogStateToFile(APFilename, APAdditionalDetails, ATruncateFile, ASortOrder, ALockTimeout,
 * AAddUsageInAllocationGroupsFrom, ...UpTo, ASubtractUsageInAllocationGroupsFrom, ...UpTo): Boolean.
 * fm5's state log groups blocks by size, largest total first (FastMM5's default order); the
 * allocation-group ranges are not supported, so any range but the defaults answers False. */
int BMM_EXPORT bmm_LogStateToFile(const wchar_t *file_name, const wchar_t *details, uint32_t truncate,
                                  uint32_t sort_order, uint32_t timeout_ms, uint32_t add_from, uint32_t add_to,
                                  uint32_t subtract_from, uint32_t subtract_to)
{
    (void)sort_order;
    (void)timeout_ms;
    if (add_from != 0 || add_to != 0xFFFFFFFFu || subtract_from != 0xFFFFFFFFu || subtract_to != 0)
        return 0;
    char path[MAX_PATH * 3];
    if (!file_name || !utf16_to_utf8(file_name, path, sizeof path))
        return 0;
    if (truncate & 0xFF)
        DeleteFileW(file_name);
    if (details && details[0]) {
        char text[4096];
        if (!utf16_to_utf8(details, text, sizeof text - 2))
            return 0;
        strcat(text, "\r\n");
        HANDLE file = CreateFileW(file_name, FILE_APPEND_DATA, FILE_SHARE_READ, NULL, OPEN_ALWAYS,
                                  FILE_ATTRIBUTE_NORMAL, NULL);
        if (file == INVALID_HANDLE_VALUE)
            return 0;
        DWORD written;
        BOOL ok = WriteFile(file, text, (DWORD)strlen(text), &written, NULL);
        CloseHandle(file);
        if (!ok)
            return 0;
    }
    return FastMM_LogStateToFile(path) == 0;
}

/* TFastMM_MinimumAddressAlignment: maa8Bytes, maa16Bytes, maa32Bytes, maa64Bytes. An ordinal past
 * the last goes to fm5 as alignment 0, which it refuses with an event. */
static unsigned alignment_of(uint32_t ordinal)
{
    ordinal &= 0xFF;
    return ordinal <= 3 ? 8u << ordinal : 0;
}

void BMM_EXPORT bmm_EnterMinimumAddressAlignment(uint32_t ordinal)
{
    FastMM_EnterMinimumAddressAlignment(alignment_of(ordinal));
}

void BMM_EXPORT bmm_ExitMinimumAddressAlignment(uint32_t ordinal)
{
    FastMM_ExitMinimumAddressAlignment(alignment_of(ordinal));
}

int BMM_EXPORT bmm_GetCurrentMinimumAddressAlignment(void)
{
    unsigned alignment = FastMM_GetCurrentMinimumAddressAlignment();
    int ordinal = 0;
    while (ordinal < 3 && (8u << ordinal) < alignment)
        ordinal++;
    return ordinal;
}

void BMM_EXPORT bmm_SetDefaultEventLogFilename(void)
{
    FastMM_SetEventLogFilename(NULL);
}

/* nil restores the default, as fm5's own function does. */
void BMM_EXPORT bmm_SetEventLogFilename(const wchar_t *file_name)
{
    char path[MAX_PATH * 3];
    if (!file_name)
        FastMM_SetEventLogFilename(NULL);
    else if (utf16_to_utf8(file_name, path, sizeof path))
        FastMM_SetEventLogFilename(path);
}

/* The name as UTF-16, in a buffer that stays valid until the next call (FastMM5 answers a pointer to
 * its own copy in the same way). */
const wchar_t *BMM_EXPORT bmm_GetEventLogFilename(void)
{
    static wchar_t name[MAX_PATH * 2];
    if (!MultiByteToWideChar(CP_UTF8, 0, FastMM_GetEventLogFilename(), -1, name, (int)(sizeof name / sizeof name[0])))
        name[0] = 0;
    return name;
}

int BMM_EXPORT bmm_DeleteEventLogFile(void)
{
    return FastMM_DeleteEventLogFile() == 1;
}

/* TFastMM_MemoryManagerEventTypeSet (two bytes, bit n for ordinal n) from and to fm5's masks. */
static uint32_t event_set_of(unsigned mask)
{
    uint32_t set = 0;
    for (int ordinal = 0; ordinal < DELPHI_EVENT_TYPE_COUNT; ordinal++)
        if (event_type_kinds[ordinal] && (mask & (1u << event_type_kinds[ordinal])))
            set |= 1u << ordinal;
    return set;
}

static unsigned mask_with_set(unsigned mask, uint32_t set)
{
    for (int ordinal = 0; ordinal < DELPHI_EVENT_TYPE_COUNT; ordinal++)
        if (event_type_kinds[ordinal])
            mask &= ~(1u << event_type_kinds[ordinal]);
    for (int ordinal = 0; ordinal < DELPHI_EVENT_TYPE_COUNT; ordinal++)
        if (event_type_kinds[ordinal] && (set & (1u << ordinal)))
            mask |= 1u << event_type_kinds[ordinal];
    return mask;
}

uint32_t BMM_EXPORT bmm_GetOutputDebugStringEvents(void)
{
    return event_set_of(FastMM_GetOutputDebugStringEvents());
}

void BMM_EXPORT bmm_SetOutputDebugStringEvents(uint32_t set)
{
    FastMM_SetOutputDebugStringEvents(mask_with_set(FastMM_GetOutputDebugStringEvents(), set & 0xFFFF));
}

uint32_t BMM_EXPORT bmm_GetLogToFileEvents(void)
{
    return event_set_of(FastMM_GetLogToFileEvents());
}

void BMM_EXPORT bmm_SetLogToFileEvents(uint32_t set)
{
    FastMM_SetLogToFileEvents(mask_with_set(FastMM_GetLogToFileEvents(), set & 0xFFFF));
}

uint32_t BMM_EXPORT bmm_GetMessageBoxEvents(void)
{
    return event_set_of(FastMM_GetMessageBoxEvents());
}

void BMM_EXPORT bmm_SetMessageBoxEvents(uint32_t set)
{
    FastMM_SetMessageBoxEvents(mask_with_set(FastMM_GetMessageBoxEvents(), set & 0xFFFF));
}

/* ---- Load and unload --------------------------------------------------------------------------- */

/* Whether BorlndMM.debug lies beside this DLL. */
static int debug_side_file_present(HINSTANCE instance)
{
    wchar_t path[MAX_PATH + 16];
    DWORD length = GetModuleFileNameW(instance, path, MAX_PATH);
    if (length == 0 || length >= MAX_PATH)
        return 0;
    while (length > 0 && path[length - 1] != L'\\' && path[length - 1] != L'/')
        length--;
    static const wchar_t name[] = L"BorlndMM.debug";
    memcpy(path + length, name, sizeof name);
    return GetFileAttributesW(path) != INVALID_FILE_ATTRIBUTES;
}

BOOL WINAPI DllMain(HINSTANCE instance, DWORD reason, LPVOID reserved)
{
    (void)reserved;
    if (reason == DLL_PROCESS_ATTACH) {
        fm5_initialize();
        if (!FastMM_DebugModeActive() && debug_side_file_present(instance)) {
            FastMM_EnterDebugMode();
            FastMM_SetReportMemoryLeaksOnShutdown(1);
        }
    } else if (reason == DLL_PROCESS_DETACH)
        fm5_shut_down();
    return TRUE;
}
