/* The Win64 unwinder of stack_unwind.h: the Microsoft x64 unwind data (RUNTIME_FUNCTION, UNWIND_INFO
 * and its codes), read once per return address into a cached step. */
#include "debug/stack_unwind.h"
#include "base/os.h"
#include <string.h>
#include <windows.h>

#if defined(FM5_64BIT) && defined(FM5_WINDOWS)

/* The unwind operations of the x64 ABI. */
enum {
    UWOP_PUSH_NONVOL = 0,
    UWOP_ALLOC_LARGE = 1,
    UWOP_ALLOC_SMALL = 2,
    UWOP_SET_FPREG = 3,
    UWOP_SAVE_NONVOL = 4,
    UWOP_SAVE_NONVOL_FAR = 5,
    UWOP_EPILOG = 6,        /* version 2 only: epilog descriptions, nothing to undo from a call site */
    UWOP_SAVE_XMM128 = 8,
    UWOP_SAVE_XMM128_FAR = 9,
    UWOP_PUSH_MACHFRAME = 10
};
#define UNWIND_CHAIN_INFO 4u
#define REGISTER_RBP 5u

/* A cached step: how to go from a frame (its RIP, RSP and RBP) to its caller's. The establisher frame
 * E is RSP, or RBP - frame_offset when the function has set RBP as its frame pointer; the return
 * address is at E + return_slot, the caller's RSP is E + return_slot + 8, and the caller's RBP is at
 * E + rbp_slot when the function saved it (else RBP is unchanged). */
enum step_kind { STEP_LEAF = 0, STEP_FROM_RSP = 1, STEP_FROM_RBP = 2, STEP_UNSUPPORTED = 3 };

typedef struct step {
    unsigned kind;
    uint32_t frame_offset;
    uint32_t return_slot;
    int64_t rbp_slot;     /* -1: RBP not saved */
} step;

/* ---- reading the unwind data ------------------------------------------------------------------- */

static unsigned code_slots(unsigned op, unsigned info)
{
    switch (op) {
    case UWOP_ALLOC_LARGE: return info == 0 ? 2 : 3;
    case UWOP_SAVE_NONVOL:
    case UWOP_SAVE_XMM128: return 2;
    case UWOP_SAVE_NONVOL_FAR:
    case UWOP_SAVE_XMM128_FAR: return 3;
    default: return 1;
    }
}

/* One unwind entry's header and codes. */
typedef struct unwind_info {
    unsigned version, flags, count, frame_register, frame_offset;
    const uint16_t *codes;
} unwind_info;

static unwind_info read_info(DWORD64 image_base, const RUNTIME_FUNCTION *function)
{
    const uint8_t *info = (const uint8_t *)(uintptr_t)(image_base + function->UnwindData);
    return (unwind_info){ info[0] & 7u, info[0] >> 3, info[2], info[3] & 15u, (info[3] >> 4) * 16u,
                          (const uint16_t *)(info + 4) };
}

/* The entry a chained entry continues with: after its codes, padded to an even count. */
static const RUNTIME_FUNCTION *chained_function(const unwind_info *info)
{
    return (const RUNTIME_FUNCTION *)(const void *)(info->codes + ((info->count + 1u) & ~1u));
}

/* Whether code i of the entry at chain depth `chain` has run at offset `offset_in_function`: codes are
 * listed last-executed first; in the function itself, those beyond the return address have not run
 * (a call from inside the prologue, such as a stack probe); a chained entry's prologue always has. */
static int code_has_run(const unwind_info *info, unsigned i, unsigned chain, uint64_t offset_in_function)
{
    return chain > 0 || (info->codes[i] & 0xFFu) <= offset_in_function;
}

/* The system unwinder's rules (RtlVirtualUnwind), for a frame at a call site: the frame base is RBP
 * minus the frame offset once the prologue has set RBP as the frame pointer, else RSP; pushes and
 * allocations move RSP up from there in the order listed, but setting the frame pointer resets RSP to
 * the frame base, so allocations listed before it (made after it) do not count; saves are at fixed
 * offsets from the frame base. */
__attribute__((noinline, cold)) static step compute_step(uintptr_t pc)
{
    const step unsupported = { STEP_UNSUPPORTED, 0, 0, -1 };
    step result = { STEP_LEAF, 0, 0, -1 };
    DWORD64 image_base = 0;
    const RUNTIME_FUNCTION *primary = RtlLookupFunctionEntry((DWORD64)pc, &image_base, NULL);
    if (!primary)
        return result;  /* a leaf: the return address is at RSP */
    uint64_t offset_in_function = (uint64_t)pc - (image_base + primary->BeginAddress);

    /* First pass: has a frame pointer been set? */
    result.kind = STEP_FROM_RSP;
    const RUNTIME_FUNCTION *function = primary;
    for (unsigned chain = 0;; chain++) {
        if (chain == 32)
            return unsupported;
        unwind_info info = read_info(image_base, function);
        if (info.version < 1 || info.version > 2)
            return unsupported;
        for (unsigned i = 0; i < info.count; i += code_slots((info.codes[i] >> 8) & 15u, info.codes[i] >> 12)) {
            if (((info.codes[i] >> 8) & 15u) == UWOP_SET_FPREG && code_has_run(&info, i, chain, offset_in_function)) {
                if (info.frame_register != REGISTER_RBP)
                    return unsupported;
                result.kind = STEP_FROM_RBP;
                result.frame_offset = info.frame_offset;
            }
        }
        if (!(info.flags & UNWIND_CHAIN_INFO))
            break;
        function = chained_function(&info);
    }

    /* Second pass: where the return address and the caller's RBP are, from the frame base. */
    uint64_t slot = 0;
    int frame_pointer_seen = 0;
    function = primary;
    for (unsigned chain = 0;; chain++) {
        unwind_info info = read_info(image_base, function);
        for (unsigned i = 0; i < info.count;) {
            unsigned op = (info.codes[i] >> 8) & 15u, op_info = info.codes[i] >> 12;
            unsigned slots = code_slots(op, op_info);
            if (i + slots > info.count)
                return unsupported;
            if (op == UWOP_EPILOG ? info.version < 2 : !code_has_run(&info, i, chain, offset_in_function)) {
                if (op == UWOP_EPILOG)
                    return unsupported;
                i += slots;
                continue;
            }
            /* Before the frame pointer is met, RSP-relative steps count only without one. */
            int counts = result.kind == STEP_FROM_RSP || frame_pointer_seen;
            switch (op) {
            case UWOP_PUSH_NONVOL:
                if (!counts)
                    return unsupported;
                if (op_info == REGISTER_RBP)
                    result.rbp_slot = (int64_t)slot;
                slot += 8;
                break;
            case UWOP_ALLOC_LARGE:
                if (counts)
                    slot += op_info == 0 ? (uint64_t)info.codes[i + 1] * 8
                                         : ((uint64_t)info.codes[i + 1] | ((uint64_t)info.codes[i + 2] << 16));
                break;
            case UWOP_ALLOC_SMALL:
                if (counts)
                    slot += (uint64_t)op_info * 8 + 8;
                break;
            case UWOP_SET_FPREG:
                frame_pointer_seen = 1;
                slot = 0;
                break;
            case UWOP_SAVE_NONVOL:
                if (op_info == REGISTER_RBP)
                    result.rbp_slot = (int64_t)info.codes[i + 1] * 8;
                break;
            case UWOP_SAVE_NONVOL_FAR:
                if (op_info == REGISTER_RBP)
                    result.rbp_slot = (int64_t)((uint64_t)info.codes[i + 1] | ((uint64_t)info.codes[i + 2] << 16));
                break;
            case UWOP_SAVE_XMM128:
            case UWOP_SAVE_XMM128_FAR:
            case UWOP_EPILOG:
                break;
            default:  /* a machine frame (interrupt, exception dispatch) or an unknown code */
                return unsupported;
            }
            i += slots;
        }
        if (!(info.flags & UNWIND_CHAIN_INFO))
            break;
        function = chained_function(&info);
    }
    if (slot > UINT32_MAX || result.rbp_slot > (int64_t)0xFFFFF)
        return unsupported;
    result.return_slot = (uint32_t)slot;
    return result;
}

/* ---- the cache ---------------------------------------------------------------------------------
 * 4096 entries, each a return address and a packed step, direct-mapped. Lock-free: a writer first
 * marks the packed word busy (compare-and-swap), then writes the address, then the new packed word; a
 * reader takes the packed word, the address and the packed word again, and believes the entry only if
 * both packed words are equal, valid and not busy, and the address is its own. Since the packed word
 * holds the whole step, two equal packed words give the same step whichever address a concurrent
 * writer was storing. */
#define CACHE_ENTRIES 4096u
#define PACKED_VALID ((uint64_t)1 << 62)
#define PACKED_BUSY ((uint64_t)1 << 63)

typedef struct cache_entry {
    volatile uint64_t address;
    volatile uint64_t packed;
} cache_entry;

static cache_entry cache[CACHE_ENTRIES];
static volatile int cache_enabled;      /* only while module unloads empty it */
static volatile int cache_state;        /* 0 not set up, 1 set up */
static size_t cache_hits, cache_misses;

/* kind: 2 bits; frame_offset / 16: 4 bits; return_slot: 32 bits; rbp_slot + 1: 21 bits. */
static uint64_t pack(step s)
{
    return PACKED_VALID | (uint64_t)s.kind | ((uint64_t)(s.frame_offset / 16u) << 2) | ((uint64_t)s.return_slot << 6) |
           ((uint64_t)(s.rbp_slot + 1) << 38);
}

static step unpack(uint64_t packed)
{
    step s;
    s.kind = (unsigned)(packed & 3u);
    s.frame_offset = (uint32_t)((packed >> 2) & 15u) * 16u;
    s.return_slot = (uint32_t)(packed >> 6);
    s.rbp_slot = (int64_t)((packed >> 38) & 0x1FFFFFu) - 1;
    return s;
}

static unsigned cache_index(uintptr_t pc)
{
    return (unsigned)((pc ^ (pc >> 12) ^ (pc >> 24)) & (CACHE_ENTRIES - 1u));
}

typedef struct walk_counts {
    size_t hits, misses;
} walk_counts;

static step cached_step(uintptr_t pc, walk_counts *counts)
{
    cache_entry *entry = &cache[cache_index(pc)];
    if (cache_enabled) {
        uint64_t first = __atomic_load_n(&entry->packed, __ATOMIC_ACQUIRE);
        uint64_t address = __atomic_load_n(&entry->address, __ATOMIC_ACQUIRE);
        uint64_t second = __atomic_load_n(&entry->packed, __ATOMIC_ACQUIRE);
        if (first == second && (first & (PACKED_VALID | PACKED_BUSY)) == PACKED_VALID && address == pc) {
            counts->hits++;
            return unpack(first);
        }
    }
    counts->misses++;
    step s = compute_step(pc);
    if (cache_enabled && (s.frame_offset <= 240u)) {
        uint64_t old = __atomic_load_n(&entry->packed, __ATOMIC_ACQUIRE);
        if (!(old & PACKED_BUSY) &&
            __atomic_compare_exchange_n(&entry->packed, &old, PACKED_BUSY, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&entry->address, (uint64_t)pc, __ATOMIC_RELEASE);
            __atomic_store_n(&entry->packed, pack(s), __ATOMIC_RELEASE);
        }
    }
    return s;
}

/* ---- emptying the cache when a module unloads --------------------------------------------------- */

#define DLL_NOTIFICATION_UNLOADED 2u

typedef void(CALLBACK *dll_notification_fn)(ULONG reason, const void *data, void *context);
typedef LONG(NTAPI *register_dll_notification_fn)(ULONG flags, dll_notification_fn callback, void *context,
                                                  void **cookie);
typedef LONG(NTAPI *unregister_dll_notification_fn)(void *cookie);

/* The registration's cookie, for fm5_unwind_shut_down; NULL while there is none. */
static void *notification_cookie;

static void CALLBACK on_dll_notification(ULONG reason, const void *data, void *context)
{
    (void)data;
    (void)context;
    if (reason != DLL_NOTIFICATION_UNLOADED)
        return;
    for (unsigned i = 0; i < CACHE_ENTRIES; i++)
        __atomic_store_n(&cache[i].packed, 0, __ATOMIC_RELEASE);
}

static void set_up_cache(void)
{
    static fm5_lock setup_lock;
    fm5_lock_with_timeout(&setup_lock, FM5_WAIT_FOREVER);
    if (!cache_state) {
        HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
        register_dll_notification_fn register_notification =
            ntdll ? (register_dll_notification_fn)(void (*)(void))GetProcAddress(ntdll, "LdrRegisterDllNotification")
                  : NULL;
        void *cookie = NULL;
        if (register_notification && register_notification(0, on_dll_notification, NULL, &cookie) == 0) {
            notification_cookie = cookie;
            cache_enabled = 1;
        }
        __atomic_store_n(&cache_state, 1, __ATOMIC_RELEASE);
    }
    fm5_unlock(&setup_lock);
}

void fm5_unwind_shut_down(void)
{
    void *cookie = __atomic_exchange_n(&notification_cookie, NULL, __ATOMIC_ACQ_REL);
    if (!cookie)
        return;
    /* No walk may use the cache once nothing empties it when modules unload. */
    __atomic_store_n(&cache_enabled, 0, __ATOMIC_RELEASE);
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
    unregister_dll_notification_fn unregister_notification =
        ntdll ? (unregister_dll_notification_fn)(void (*)(void))GetProcAddress(ntdll, "LdrUnregisterDllNotification")
              : NULL;
    if (unregister_notification)
        unregister_notification(cookie);
}

/* ---- fm5's own frames: learned prefixes ---------------------------------------------------------
 * A trace taken inside fm5 starts with a run of fm5's own frames (seven on the way from FastMM_GetMem
 * in debug mode), which are dropped. Their steps never change, so the run is learned once per path:
 * where, from the RSP the walk starts with, each of its return addresses lies, what each must be, and
 * where the RBP to continue with was saved. A later walk checks all of those return addresses at
 * once (independent loads, instead of one dependent lookup per frame) and, if every one is as
 * learned, the frames are the learned ones and it continues after the run. Only runs of frames
 * without a frame pointer are learned: their offsets depend on nothing but the return addresses.
 * Entries are written once, then published; they hold only addresses of fm5's own module. */
#define PREFIXES 32u
#define PREFIX_FRAMES 16u

typedef struct prefix {
    unsigned length;                   /* frames in the run, ours included */
    uintptr_t start;                   /* the walk's first RIP */
    uint32_t slot[PREFIX_FRAMES];      /* from the start RSP: where frame k's return address is */
    uintptr_t expected[PREFIX_FRAMES]; /* frame k's return address, for every k but the last */
    int64_t rbp_slot;                  /* from the start RSP: the RBP to continue with, or -1 */
} prefix;

static prefix prefixes[PREFIXES];
static volatile unsigned prefixes_reserved, prefixes_published[PREFIXES];

/* A learned run that matches this stack: 1 and the state after it, or 0. */
static int skip_learned_run(uintptr_t start, uintptr_t *rip, uintptr_t *rsp, uintptr_t *rbp, uintptr_t stack_high)
{
    uintptr_t base = *rsp;
    unsigned reserved = __atomic_load_n(&prefixes_reserved, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < reserved && i < PREFIXES; i++) {
        if (!__atomic_load_n(&prefixes_published[i], __ATOMIC_ACQUIRE))
            continue;
        const prefix *run = &prefixes[i];
        unsigned last = run->length - 1;
        if (run->start != start || base + run->slot[last] + 8 > stack_high)
            continue;
        unsigned k = 0;
        while (k < last && *(const uintptr_t *)(base + run->slot[k]) == run->expected[k])
            k++;
        if (k < last)
            continue;
        if (run->rbp_slot >= 0)
            *rbp = *(const uintptr_t *)(base + (uintptr_t)run->rbp_slot);
        *rip = *(const uintptr_t *)(base + run->slot[last]);
        *rsp = base + run->slot[last] + 8;
        return 1;
    }
    return 0;
}

static void publish_run(const prefix *run)
{
    unsigned reserved = __atomic_load_n(&prefixes_reserved, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < reserved && i < PREFIXES; i++)
        if (__atomic_load_n(&prefixes_published[i], __ATOMIC_ACQUIRE) && prefixes[i].start == run->start &&
            prefixes[i].length == run->length &&
            memcmp(prefixes[i].expected, run->expected, (run->length - 1) * sizeof run->expected[0]) == 0)
            return;
    unsigned index = __atomic_fetch_add(&prefixes_reserved, 1, __ATOMIC_ACQ_REL);
    if (index >= PREFIXES)
        return;
    prefixes[index] = *run;
    __atomic_store_n(&prefixes_published[index], 1, __ATOMIC_RELEASE);
}

/* ---- the walk ----------------------------------------------------------------------------------- */

__attribute__((noinline)) int fm5_unwind_stack(void **frames, unsigned count, unsigned skip, uintptr_t own_start,
                                               uintptr_t own_end)
{
    if (!__atomic_load_n(&cache_state, __ATOMIC_ACQUIRE))
        set_up_cache();
    /* This frame's RIP, RSP and RBP, read where the prologue is done and RSP is the body's for good
     * (the x64 ABI moves RSP only in prologues and epilogues): a start that costs three moves, where
     * RtlCaptureContext stores every register and the FPU state. */
    uintptr_t rip, rsp, rbp;
    __asm__ volatile("leaq 0(%%rip), %0\n\tmovq %%rsp, %1\n\tmovq %%rbp, %2" : "=r"(rip), "=r"(rsp), "=r"(rbp));
    /* The thread's stack bounds from its TIB (GS:[8] StackBase, GS:[16] StackLimit); NtCurrentTeb()
     * itself trips GCC 12's array-bounds warning in MinGW's headers. */
    uintptr_t stack_low, stack_high;
    __asm__("movq %%gs:16, %0" : "=r"(stack_low));
    __asm__("movq %%gs:8, %0" : "=r"(stack_high));
    unsigned found = 0, to_skip = skip;
    walk_counts counts = { 0, 0 };
    /* fm5's own frames first: a learned run skips them at once; else they are walked (and learned). */
    int in_own_frames = own_start < own_end && rip - own_start < own_end - own_start;
    const uintptr_t start = rip, start_rsp = rsp;
    prefix learning = { 0, start, { 0 }, { 0 }, -1 };
    int can_learn = in_own_frames;
    if (in_own_frames && skip_learned_run(start, &rip, &rsp, &rbp, stack_high)) {
        in_own_frames = rip - own_start < own_end - own_start;
        can_learn = 0;
        if (!rip)
            return 0;
        if (!in_own_frames) {
            if (to_skip)
                to_skip--;
            else if (count)
                frames[found++] = (void *)rip;
        }
    }
    /* Our own frame first: unwinding it gives the return address into our caller. */
    while (found < count) {
        step s = cached_step(rip, &counts);
        if (s.kind == STEP_UNSUPPORTED) {
            found = (unsigned)-1;
            break;
        }
        uintptr_t establisher = s.kind == STEP_FROM_RBP ? rbp - s.frame_offset : rsp;
        uintptr_t slot = establisher + s.return_slot;
        if (establisher < stack_low || slot + 8 > stack_high || slot < establisher || (slot & 7u))
            break;
        if (s.rbp_slot >= 0) {
            uintptr_t saved = establisher + (uintptr_t)s.rbp_slot;
            if (saved + 8 > stack_high)
                break;
            rbp = *(const uintptr_t *)saved;
            if (can_learn)
                learning.rbp_slot = (int64_t)(saved - start_rsp);
        }
        rip = *(const uintptr_t *)slot;
        rsp = slot + 8;
        if (in_own_frames) {
            if (can_learn) {
                if (s.kind == STEP_FROM_RBP || learning.length == PREFIX_FRAMES || slot - start_rsp > UINT32_MAX) {
                    can_learn = 0;
                } else {
                    learning.slot[learning.length] = (uint32_t)(slot - start_rsp);
                    learning.expected[learning.length] = rip;
                    learning.length++;
                }
            }
            in_own_frames = rip - own_start < own_end - own_start;
            if (in_own_frames)
                continue;
            if (can_learn && rip)
                publish_run(&learning);
            can_learn = 0;
        }
        if (!rip)
            break;
        if (to_skip)
            to_skip--;
        else
            frames[found++] = (void *)rip;
    }
    /* Statistics only: a plain load and store (no locked add on a shared line in every trace), so
     * concurrent traces may lose counts; misses are rare and counted exactly. */
    __atomic_store_n(&cache_hits, __atomic_load_n(&cache_hits, __ATOMIC_RELAXED) + counts.hits, __ATOMIC_RELAXED);
    if (counts.misses)
        __atomic_add_fetch(&cache_misses, counts.misses, __ATOMIC_RELAXED);
    return (int)found;
}

void fm5_unwind_statistics(size_t *hits, size_t *misses, int *unload_notifications)
{
    if (!__atomic_load_n(&cache_state, __ATOMIC_ACQUIRE))
        set_up_cache();
    *hits = __atomic_load_n(&cache_hits, __ATOMIC_RELAXED);
    *misses = __atomic_load_n(&cache_misses, __ATOMIC_RELAXED);
    *unload_notifications = cache_enabled;
}

#endif
