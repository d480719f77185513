/* Claims, and the sole claimer. Every free claims its block first: it changes the block's status word
 * from "live" to "being freed" by compare-and-swap, so that of two frees of one block racing on two
 * threads exactly one succeeds and the other reports the double free (blocks/small_blocks.h,
 * fm5_small_claim; blocks/arena.h, fm5_arena_claim). That compare-and-swap is a locked instruction,
 * which waits for every store the thread made before it to reach the cache: in the single-threaded
 * workloads (Win64, Wine, 2026-12-04) the thread cache's claim alone cost validate45 half its time
 * (126 against 61 ms) and glibc_simple a quarter, against a plain load and store.
 *
 * While one thread alone has claimed blocks - the sole claimer - no other free can race with its
 * own, so its thread cache (blocks/thread_cache.h, and the asm's CACHE_PUSH) claims with a plain load
 * and store inside a window it announces in its claimer record. The first claim of any other thread
 * ends this for good: fm5_claims_share turns the sole claimer's plain claims off, waits until it is
 * outside its window, and only then lets claims go on, every one a compare-and-swap from then on.
 *
 * fm5_sole_claimer: NULL until the first claim; the claimer record of the sole claimer's thread; then
 * FM5_CLAIMS_SHARED for the rest of the process. Only fm5_claims_* change it, under claims_lock (claims.c).
 * A thread without an OS handle (fm5_os_thread_handle_open gives 0: always on the POSIX host build)
 * never becomes the sole claimer, so the host build starts sharing at its first claim.
 *
 * Why the plain claim is safe without a fence on the sole claimer's side (x86: stores are seen in
 * order; a load may pass an earlier store of the same thread, which is what a fence would forbid):
 *   the sole claimer:  claiming = 1;  if (sole) { the plain claim }  claiming = 0
 *   fm5_claims_share:  sole = 0;  fm5_os_thread_interrupt(its thread);  wait while claiming;  SHARED
 * The interrupt stops the sole claimer at an instruction boundary, with every store before it visible
 * and every later load seeing "sole = 0". Stopped before its load of `sole`, it reads 0 afterwards
 * and takes the compare-and-swap. Stopped after it, its "claiming = 1" (an earlier store) is visible,
 * and fm5_claims_share waits for the window to close. So no plain claim overlaps a claim of another
 * thread: the others claim only after fm5_claims_share has returned. A sole claimer killed inside its
 * window (TerminateThread) is not waited for once the OS says its thread has ended.
 *
 * Lock order: the thread caches' record lock, then claims_lock; nothing is taken under claims_lock. */
#ifndef FM5_CLAIMS_H
#define FM5_CLAIMS_H

#include "base/platform.h"

/* A thread's claimer record: in its thread cache's first line (asm/ reads both bytes). */
typedef struct fm5_claimer {
    volatile uint8_t sole;     /* 1 while its thread is the sole claimer; cleared by fm5_claims_share */
    volatile uint8_t claiming; /* 1 inside the plain claim's window; only its thread writes it */
} fm5_claimer;

#define FM5_CLAIMS_SHARED ((fm5_claimer *)1)
extern fm5_claimer *volatile fm5_sole_claimer;

/* A thread takes `claimer` (with its thread cache; `thread_handle` from fm5_os_thread_handle_open):
 * it becomes the sole claimer when nobody has claimed yet, else claims are shared. */
void fm5_claims_adopt(fm5_claimer *claimer, uintptr_t thread_handle);
/* `claimer`'s thread gives it up (at its exit), or has ended: claims are shared if it was sole. */
void fm5_claims_give_up(fm5_claimer *claimer);
/* The out-of-line half of fm5_claims_prepare. */
void fm5_claims_prepare_slow(void);

/* Before a compare-and-swap claim that does not go through a claimer record: makes claims shared
 * unless the running thread is the sole claimer. One load once they are shared. */
FM5_INLINE void fm5_claims_prepare(void)
{
    if (FM5_UNLIKELY(__atomic_load_n(&fm5_sole_claimer, __ATOMIC_ACQUIRE) != FM5_CLAIMS_SHARED))
        fm5_claims_prepare_slow();
}

/* The claim of the thread whose record is `mine`: status word `word` from `expected` to `desired`,
 * plainly inside the announced window while the thread is the sole claimer, else by compare-and-swap.
 * The thread has adopted `mine` (so claims are shared unless it is the sole claimer). Returns 1 when
 * it claimed. The signal fences keep the compiler from moving the claim out of the window; the
 * processor needs none (above). */
FM5_INLINE int fm5_claims_claim_u16(fm5_claimer *mine, volatile uint16_t *word, uint16_t expected,
                                    uint16_t desired)
{
    if (mine->sole) {
        mine->claiming = 1;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        if (mine->sole) {
            int won = *word == expected;
            if (won)
                *word = desired;
            __atomic_signal_fence(__ATOMIC_SEQ_CST);
            mine->claiming = 0;
            return won;
        }
        mine->claiming = 0;
    }
    return fm5_cas_u16(word, expected, desired);
}

#endif
