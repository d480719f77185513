/* Claims and the sole claimer: blocks/claims.h says what and why. */
#include "blocks/claims.h"
#include "base/checked.h"
#include "base/os.h"

fm5_claimer *volatile fm5_sole_claimer;

/* Guards the changes of fm5_sole_claimer and the sole claimer's thread below. */
static fm5_lock claims_lock;
static uint32_t sole_thread_id;
static uintptr_t sole_thread_handle;

/* Under claims_lock, with a sole claimer: its plain claims off, its window closed, then shared. */
static void share_locked(void)
{
    fm5_claimer *sole = fm5_sole_claimer;
    FM5_ASSERT(sole != NULL && sole != FM5_CLAIMS_SHARED);
    __atomic_store_n(&sole->sole, 0, __ATOMIC_SEQ_CST);
    int interrupted = fm5_os_thread_interrupt(sole_thread_handle);
    FM5_ASSERT(interrupted >= 0); /* a sole claimer has a handle, which only a build that interrupts gives */
    if (interrupted > 0)
        while (__atomic_load_n(&sole->claiming, __ATOMIC_ACQUIRE) && !fm5_os_thread_has_ended(sole_thread_handle))
            fm5_os_yield();
    sole_thread_handle = 0;
    __atomic_store_n(&fm5_sole_claimer, FM5_CLAIMS_SHARED, __ATOMIC_RELEASE);
}

void fm5_claims_adopt(fm5_claimer *claimer, uintptr_t thread_handle)
{
    claimer->claiming = 0;
    claimer->sole = 0;
    fm5_lock_with_timeout(&claims_lock, FM5_WAIT_FOREVER);
    fm5_claimer *sole = fm5_sole_claimer;
    if (sole == NULL && thread_handle) {
        claimer->sole = 1;
        sole_thread_id = fm5_os_thread_id();
        sole_thread_handle = thread_handle;
        __atomic_store_n(&fm5_sole_claimer, claimer, __ATOMIC_RELEASE);
    } else if (sole == NULL) {
        __atomic_store_n(&fm5_sole_claimer, FM5_CLAIMS_SHARED, __ATOMIC_RELEASE);
    } else if (sole != FM5_CLAIMS_SHARED) {
        share_locked();
    }
    fm5_unlock(&claims_lock);
}

void fm5_claims_give_up(fm5_claimer *claimer)
{
    if (__atomic_load_n(&fm5_sole_claimer, __ATOMIC_ACQUIRE) != claimer)
        return;
    fm5_lock_with_timeout(&claims_lock, FM5_WAIT_FOREVER);
    /* Its thread is leaving or gone: it claims no more, and no window of it is open. */
    if (fm5_sole_claimer == claimer) {
        claimer->sole = 0;
        sole_thread_handle = 0;
        __atomic_store_n(&fm5_sole_claimer, FM5_CLAIMS_SHARED, __ATOMIC_RELEASE);
    }
    fm5_unlock(&claims_lock);
}

void fm5_claims_prepare_slow(void)
{
    /* The sole claimer's own compare-and-swap claims need nothing: set before the record was
     * published, sole_thread_id is its thread's while fm5_sole_claimer names a record. */
    fm5_claimer *sole = __atomic_load_n(&fm5_sole_claimer, __ATOMIC_ACQUIRE);
    if (sole != NULL && sole != FM5_CLAIMS_SHARED && sole_thread_id == fm5_os_thread_id())
        return;
    fm5_lock_with_timeout(&claims_lock, FM5_WAIT_FOREVER);
    sole = fm5_sole_claimer;
    if (sole == NULL)
        __atomic_store_n(&fm5_sole_claimer, FM5_CLAIMS_SHARED, __ATOMIC_RELEASE);
    else if (sole != FM5_CLAIMS_SHARED)
        share_locked();
    fm5_unlock(&claims_lock);
}
