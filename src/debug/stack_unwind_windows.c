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
    size_t hits, misses, replays;
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

/* Walks remembered before this count of module unloads are not believed (the memo below). */
static volatile uint32_t memo_generation;

static void CALLBACK on_dll_notification(ULONG reason, const void *data, void *context)
{
    (void)data;
    (void)context;
    if (reason != DLL_NOTIFICATION_UNLOADED)
        return;
    __atomic_add_fetch(&memo_generation, 1, __ATOMIC_ACQ_REL);
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

/* ---- remembered walks ---------------------------------------------------------------------------
 * A program allocates from the same call chains again and again, and a walk from one of them reads the
 * same return addresses at the same offsets from its first frame's RSP every time: each step depends
 * only on the return address it starts from (the cached step) and, for a frame-pointer step, on RBP.
 * So the walk from a trace's first frame is remembered: for each step, where the next return address
 * lay and what it was, where RBP was restored from, and what RBP was (relative to that RSP) when a
 * frame-pointer step used it. A later walk from the same first frame replays it with independent
 * loads instead of one dependent cache lookup per frame: if every value it reads is the one
 * remembered, the walk would have computed the same frames, so they are those. A walk that ends (a
 * return address of 0) ends the replay; one that stopped for another reason (the count, a bound, a
 * frame not remembered) goes on frame by frame from where the replay stops.
 * Direct-mapped by the first frame's return address; an entry is written under an odd version (a
 * writer first moves it from even to odd with a compare-and-swap) and read between two equal even
 * versions; entries learned before the latest module unload are not believed (memo_generation). */
#define MEMO_ENTRIES 256u
#define MEMO_STEPS 31u
#define NO_FRAME_POINTER INT32_MIN

typedef struct trace_memo {
    volatile uint32_t version;
    uint32_t generation;
    uint32_t steps;
    uint32_t extent;                       /* from the base: the end of the highest stack word read */
    uintptr_t first_rip;
    uint32_t return_slot[MEMO_STEPS];      /* from the base: where step k found the next return address */
    int32_t rbp_from[MEMO_STEPS];          /* from the base: where step k restored RBP, or -1 */
    int32_t rbp_before[MEMO_STEPS];        /* RBP minus the base when step k used it, or NO_FRAME_POINTER */
    uintptr_t next_rip[MEMO_STEPS];        /* the return address step k found */
} trace_memo;

static trace_memo memos[MEMO_ENTRIES];
static size_t memo_hits;

static trace_memo *memo_of(uintptr_t rip)
{
    return &memos[(rip ^ (rip >> 9) ^ (rip >> 21)) & (MEMO_ENTRIES - 1u)];
}

#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)
#define STORE(field, value) __atomic_store_n(&(field), (value), __ATOMIC_RELAXED)

enum replay { REPLAY_MISSED, REPLAY_ENDED, REPLAY_GO_ON };

/* Replays the walk remembered for the frame whose return address is `rip`, found with RSP `base` and
 * RBP `rbp`: appends its frames after frames[*found] (up to count) and gives the state after them. */
static enum replay replay(uintptr_t *rip, uintptr_t *rsp, uintptr_t *rbp, uintptr_t stack_high, void **frames,
                          unsigned count, unsigned *found)
{
    const uintptr_t base = *rsp;
    trace_memo *memo = memo_of(*rip);
    uint32_t version = __atomic_load_n(&memo->version, __ATOMIC_ACQUIRE);
    if (!version || (version & 1u) || LOAD(memo->first_rip) != *rip ||
        LOAD(memo->generation) != __atomic_load_n(&memo_generation, __ATOMIC_ACQUIRE))
        return REPLAY_MISSED;
    unsigned steps = LOAD(memo->steps);
    if (steps > MEMO_STEPS || base + LOAD(memo->extent) > stack_high || base + LOAD(memo->extent) < base)
        return REPLAY_MISSED;
    unsigned n = *found;
    uintptr_t next = *rip, next_rsp = base, next_rbp = *rbp;
    for (unsigned k = 0; k < steps && n < count; k++) {
        int32_t rbp_before = LOAD(memo->rbp_before[k]);
        if (rbp_before != NO_FRAME_POINTER && (intptr_t)(next_rbp - base) != (intptr_t)rbp_before)
            return REPLAY_MISSED;
        /* Each word is bounded by the stack itself, not only by the entry's extent: a writer may be
         * changing the entry under this replay (the versions then differ and it is not believed), and
         * a torn mix of old extent and new offsets must not read past the stack. */
        uintptr_t slot = base + LOAD(memo->return_slot[k]);
        if (slot + 8 > stack_high)
            return REPLAY_MISSED;
        next = *(const uintptr_t *)slot;
        if (next != LOAD(memo->next_rip[k]))
            return REPLAY_MISSED;
        int32_t rbp_from = LOAD(memo->rbp_from[k]);
        if (rbp_from >= 0) {
            uintptr_t saved = base + (uint32_t)rbp_from;
            if (saved + 8 > stack_high)
                return REPLAY_MISSED;
            next_rbp = *(const uintptr_t *)saved;
        }
        next_rsp = slot + 8;
        if (!next)
            break;
        frames[n++] = (void *)next;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&memo->version, __ATOMIC_RELAXED) != version)
        return REPLAY_MISSED;
    *found = n;
    *rip = next;
    *rsp = next_rsp;
    *rbp = next_rbp;
    return !next || n == count ? REPLAY_ENDED : REPLAY_GO_ON;
}

static void remember(const trace_memo *learned)
{
    trace_memo *memo = memo_of(learned->first_rip);
    uint32_t version = __atomic_load_n(&memo->version, __ATOMIC_ACQUIRE);
    if ((version & 1u) ||
        !__atomic_compare_exchange_n(&memo->version, &version, version + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return;
    STORE(memo->generation, learned->generation);
    STORE(memo->steps, learned->steps);
    STORE(memo->extent, learned->extent);
    STORE(memo->first_rip, learned->first_rip);
    for (unsigned k = 0; k < learned->steps; k++) {
        STORE(memo->return_slot[k], learned->return_slot[k]);
        STORE(memo->rbp_from[k], learned->rbp_from[k]);
        STORE(memo->rbp_before[k], learned->rbp_before[k]);
        STORE(memo->next_rip[k], learned->next_rip[k]);
    }
    __atomic_store_n(&memo->version, version + 2, __ATOMIC_RELEASE);
}

/* Records one step of a walk being learned; 0 when it cannot be remembered (the walk goes on, and what
 * was learned up to here is kept). */
static int learn_step(trace_memo *learning, uintptr_t base, int frame_pointer, uintptr_t rbp, uintptr_t slot,
                      intptr_t rbp_saved_at, uintptr_t next_rip)
{
    unsigned k = learning->steps;
    uintptr_t high = slot + 8;
    if (k == MEMO_STEPS || slot < base || slot - base > INT32_MAX)
        return 0;
    intptr_t rbp_offset = (intptr_t)(rbp - base);
    if (frame_pointer && (rbp_offset <= INT32_MIN || rbp_offset > INT32_MAX))
        return 0;
    if (rbp_saved_at >= 0) {
        if ((uintptr_t)rbp_saved_at < base || (uintptr_t)rbp_saved_at - base > INT32_MAX)
            return 0;
        if ((uintptr_t)rbp_saved_at + 8 > high)
            high = (uintptr_t)rbp_saved_at + 8;
    }
    learning->return_slot[k] = (uint32_t)(slot - base);
    learning->rbp_from[k] = rbp_saved_at >= 0 ? (int32_t)((uintptr_t)rbp_saved_at - base) : -1;
    learning->rbp_before[k] = frame_pointer ? (int32_t)rbp_offset : NO_FRAME_POINTER;
    learning->next_rip[k] = next_rip;
    if (high - base > learning->extent)
        learning->extent = (uint32_t)(high - base);
    learning->steps = k + 1;
    return 1;
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
    walk_counts counts = { 0, 0, 0 };
    /* The generation is read before any step is taken, so that a walk that raced a module unload is
     * remembered as older than it. */
    const int memo_enabled = cache_enabled;
    trace_memo learning;
    learning.generation = __atomic_load_n(&memo_generation, __ATOMIC_ACQUIRE);
    learning.steps = 0;
    learning.extent = 0;
    int learning_walk = 0, replayed = 0;
    uintptr_t memo_base = 0;
    /* fm5's own frames first: a learned run skips them at once; else they are walked (and learned). */
    int in_own_frames = own_start < own_end && rip - own_start < own_end - own_start;
    const uintptr_t start = rip, start_rsp = rsp;
    prefix run;  /* only its first `length` entries are ever read */
    run.length = 0;
    run.start = start;
    run.rbp_slot = -1;
    int can_learn = in_own_frames;
    int stored = 0;  /* a frame was just stored: try the memo after the first */
    if (in_own_frames && skip_learned_run(start, &rip, &rsp, &rbp, stack_high)) {
        in_own_frames = rip - own_start < own_end - own_start;
        can_learn = 0;
        if (!rip)
            return 0;
        if (!in_own_frames) {
            if (to_skip) {
                to_skip--;
            } else if (count) {
                frames[found++] = (void *)rip;
                stored = 1;
            }
        }
    }
    /* Our own frame first: unwinding it gives the return address into our caller. */
    for (;;) {
        if (stored && found == 1 && memo_enabled && !replayed) {
            /* The trace's first frame: replay the walk remembered from here, or learn it. */
            replayed = 1;
            enum replay outcome = replay(&rip, &rsp, &rbp, stack_high, frames, count, &found);
            if (outcome != REPLAY_MISSED)
                counts.replays++;
            if (outcome == REPLAY_ENDED)
                break;
            if (outcome == REPLAY_MISSED) {
                learning_walk = 1;
                learning.first_rip = rip;
                memo_base = rsp;
            }
        }
        stored = 0;
        if (found >= count)
            break;
        step s = cached_step(rip, &counts);
        if (s.kind == STEP_UNSUPPORTED) {
            found = (unsigned)-1;
            learning_walk = 0;
            break;
        }
        uintptr_t establisher = s.kind == STEP_FROM_RBP ? rbp - s.frame_offset : rsp;
        uintptr_t slot = establisher + s.return_slot;
        if (establisher < stack_low || slot + 8 > stack_high || slot < establisher || (slot & 7u))
            break;
        uintptr_t rbp_used = rbp;
        intptr_t rbp_saved_at = -1;
        if (s.rbp_slot >= 0) {
            uintptr_t saved = establisher + (uintptr_t)s.rbp_slot;
            if (saved + 8 > stack_high)
                break;
            rbp = *(const uintptr_t *)saved;
            rbp_saved_at = (intptr_t)saved;
            if (can_learn)
                run.rbp_slot = (int64_t)(saved - start_rsp);
        }
        rip = *(const uintptr_t *)slot;
        rsp = slot + 8;
        if (in_own_frames) {
            if (can_learn) {
                if (s.kind == STEP_FROM_RBP || run.length == PREFIX_FRAMES || slot - start_rsp > UINT32_MAX) {
                    can_learn = 0;
                } else {
                    run.slot[run.length] = (uint32_t)(slot - start_rsp);
                    run.expected[run.length] = rip;
                    run.length++;
                }
            }
            in_own_frames = rip - own_start < own_end - own_start;
            if (in_own_frames)
                continue;
            if (can_learn && rip)
                publish_run(&run);
            can_learn = 0;
        }
        if (learning_walk && !learn_step(&learning, memo_base, s.kind == STEP_FROM_RBP, rbp_used, slot,
                                         rbp_saved_at, rip))
            learning_walk = 0;
        if (!rip)
            break;
        if (to_skip) {
            to_skip--;
        } else {
            frames[found++] = (void *)rip;
            stored = 1;
        }
    }
    if (learning.steps && found != (unsigned)-1)
        remember(&learning);
    /* Statistics only: a plain load and store (no locked add on a shared line in every trace), so
     * concurrent traces may lose counts; misses are rare and counted exactly. */
    __atomic_store_n(&cache_hits, __atomic_load_n(&cache_hits, __ATOMIC_RELAXED) + counts.hits, __ATOMIC_RELAXED);
    if (counts.replays)
        __atomic_store_n(&memo_hits, __atomic_load_n(&memo_hits, __ATOMIC_RELAXED) + counts.replays, __ATOMIC_RELAXED);
    if (counts.misses)
        __atomic_add_fetch(&cache_misses, counts.misses, __ATOMIC_RELAXED);
    return (int)found;
}

void fm5_unwind_statistics(size_t *hits, size_t *misses, size_t *replays, int *unload_notifications)
{
    if (!__atomic_load_n(&cache_state, __ATOMIC_ACQUIRE))
        set_up_cache();
    *hits = __atomic_load_n(&cache_hits, __ATOMIC_RELAXED);
    *replays = __atomic_load_n(&memo_hits, __ATOMIC_RELAXED);
    *misses = __atomic_load_n(&cache_misses, __ATOMIC_RELAXED);
    *unload_notifications = cache_enabled;
}

#endif
