/* Adaptive small-block arena affinity: the records, their seqlock, and activation (arena_affinity.h). */
#include "blocks/arena_affinity.h"
#include "blocks/small_blocks.h"

fm5_affinity_slot fm5_affinity_slots[FM5_AFFINITY_SLOT_COUNT];
uint32_t fm5_affinity_slot_mask = FM5_AFFINITY_SLOT_COUNT - 1;
volatile int32_t fm5_affinity_enabled;

/* Round robin over the threads given a record; starts at 1, so the first one leaves arena 0. */
static volatile uint32_t next_arena;

unsigned fm5_affinity_first_arena(unsigned class_slot)
{
    fm5_os_thread_facts me = fm5_os_current_thread_facts();
    const fm5_affinity_slot *slot = fm5_affinity_slot_of(me.id);
    uint32_t version = __atomic_load_n(&slot->version, __ATOMIC_ACQUIRE);
    uintptr_t key = __atomic_load_n(&slot->key, __ATOMIC_RELAXED);
    uint32_t classes = __atomic_load_n(&slot->classes[class_slot / 32], __ATOMIC_RELAXED);
    uint32_t arena = __atomic_load_n(&slot->arena, __ATOMIC_RELAXED);
    /* The field loads above happen before the second version load. */
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if ((version & 1) || __atomic_load_n(&slot->version, __ATOMIC_RELAXED) != version ||
        key != fm5_affinity_key(me) || !((classes >> (class_slot % 32)) & 1) || arena >= fm5_small_arena_count)
        return 0;
    return arena;
}

unsigned fm5_affinity_after_contention(unsigned class_slot)
{
    if (!__atomic_load_n(&fm5_affinity_enabled, __ATOMIC_RELAXED))
        return 0;
    fm5_os_thread_facts me = fm5_os_current_thread_facts();
    uintptr_t key = fm5_affinity_key(me);
    fm5_affinity_slot *slot = fm5_affinity_slot_of(me.id);
    uint32_t version = __atomic_load_n(&slot->version, __ATOMIC_RELAXED);
    /* Another writer in the slot: no record this time. */
    if ((version & 1) || !__atomic_compare_exchange_n(&slot->version, &version, version + 1, 0, __ATOMIC_ACQ_REL,
                                                      __ATOMIC_RELAXED))
        return 0;
    if (__atomic_load_n(&slot->key, __ATOMIC_RELAXED) != key) {
        uint32_t arena = (__atomic_add_fetch(&next_arena, 1, __ATOMIC_RELAXED)) % fm5_small_arena_count;
        __atomic_store_n(&slot->key, key, __ATOMIC_RELAXED);
        __atomic_store_n(&slot->arena, arena, __ATOMIC_RELAXED);
        for (unsigned w = 0; w < FM5_AFFINITY_CLASS_WORDS; w++)
            __atomic_store_n(&slot->classes[w], 0, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&slot->classes[class_slot / 32],
                     __atomic_load_n(&slot->classes[class_slot / 32], __ATOMIC_RELAXED) | (1u << (class_slot % 32)),
                     __ATOMIC_RELAXED);
    unsigned arena = __atomic_load_n(&slot->arena, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->version, version + 2, __ATOMIC_RELEASE);
    /* A disable that ran meanwhile may see this store undone by it, or not: either is a valid order. */
    if (__atomic_load_n(&fm5_affinity_enabled, __ATOMIC_RELAXED))
        __atomic_store_n(&fm5_small_managers[0][class_slot].affinity_active, 1, __ATOMIC_RELAXED);
    return arena < fm5_small_arena_count ? arena : 0;
}

int fm5_affinity_set_enabled(int enabled)
{
    int previous = __atomic_exchange_n(&fm5_affinity_enabled, enabled != 0, __ATOMIC_ACQ_REL);
    if (!enabled)
        for (unsigned s = 0; s < FM5_SMALL_CLASS_COUNT; s++)
            __atomic_store_n(&fm5_small_managers[0][s].affinity_active, 0, __ATOMIC_RELAXED);
    return previous;
}
