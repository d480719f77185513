/* Walking every block, and the statistics computed from a walk. */
#include "block_walk.h"
#include "block_status.h"
#include "debug_block.h"

int fm5_walk_all(fm5_walk_visitor visitor, void *context, DWORD timeout_ms)
{
    int large = fm5_large_walk(visitor, context, timeout_ms);
    if (large == FM5_WALK_STOPPED)
        return large;
    int medium = fm5_medium_walk(visitor, context, timeout_ms);
    if (medium == FM5_WALK_STOPPED)
        return medium;
    return large == FM5_WALK_COMPLETE && medium == FM5_WALK_COMPLETE ? FM5_WALK_COMPLETE : FM5_WALK_INCOMPLETE;
}

int fm5_walk_item_live_user_block(const fm5_walk_item *item, fm5_live_user_block *block)
{
    if (item->is_free || item->is_unused ||
        !(item->kind & (FastMM_SmallBlock | FastMM_MediumBlock | FastMM_LargeBlock)))
        return 0;
    uint16_t status = *fm5_status_word(item->address);
    if (fm5_status_is_pending_free(status))
        return 0;
    block->user = item->address;
    block->size = item->usable_size;
    block->is_debug_block = (status & FM5_STATUS_HAS_DEBUG_INFO) != 0;
    if (block->is_debug_block) {
        const fm5_debug_block_header *header = item->address;
        if (header->flags != FM5_DEBUG_BLOCK_IN_USE)
            return 0;
        block->user = fm5_debug_user_data(header);
        block->size = header->user_size;
    }
    return 1;
}

/* ---- FastMM_WalkBlocks ------------------------------------------------------------------------ */

typedef struct public_walk {
    FastMM_WalkBlocksCallback callback;
    void *user;
    unsigned kinds;
    int used_only;
} public_walk;

static int visit_for_public_walk(const fm5_walk_item *item, void *context)
{
    const public_walk *walk = context;
    if (item->is_unused || !(walk->kinds & item->kind) || (walk->used_only && item->is_free))
        return 0;
    FastMM_WalkBlockInfo info = { item->address, item->block_size, item->usable_size, item->kind, item->arena,
                                  item->is_free, 0, 0, 0 };
    if ((item->kind & (FastMM_SmallBlock | FastMM_MediumBlock | FastMM_LargeBlock)) &&
        (*fm5_status_word(item->address) & FM5_STATUS_HAS_DEBUG_INFO)) {
        const fm5_debug_block_header *header = item->address;
        info.Address = fm5_debug_user_data(header);
        info.IsDebugBlock = 1;
        info.AllocationNumber = header->allocation_number;
        info.AllocationGroup = header->allocation_group;
        /* A corrupted size is not passed on as if it were usable. */
        info.UsableSize = header->user_size <= item->usable_size - FM5_DEBUG_HEADER_SIZE ? header->user_size : 0;
    }
    return walk->callback(&info, walk->user) != 0;
}

int FM5_CALL FastMM_WalkBlocks(FastMM_WalkBlocksCallback callback, void *user, unsigned kinds, int used_only,
                               unsigned timeout_ms)
{
    if (!callback)
        return 0;
    const unsigned all_kinds = FastMM_SmallBlock | FastMM_MediumBlock | FastMM_LargeBlock | FastMM_SmallBlockSpan |
                               FastMM_MediumBlockSpan;
    public_walk walk = { callback, user, kinds ? kinds & all_kinds : all_kinds, used_only };
    return fm5_walk_all(visit_for_public_walk, &walk, timeout_ms) == FM5_WALK_COMPLETE;
}

/* ---- heap status and usage summary ------------------------------------------------------------ */

static int visit_for_status(const fm5_walk_item *item, void *context)
{
    FastMM_HeapStatus *status = context;
    switch (item->kind) {
    case FastMM_MediumBlockSpan:
        status->TotalAddrSpace += item->block_size;
        break;
    case FastMM_SmallBlockSpan:
        break;
    case FastMM_LargeBlock:
        status->TotalAddrSpace += item->block_size;
        status->TotalAllocated += item->block_size;
        break;
    default:
        if (item->is_unused)
            status->Unused += item->block_size;
        else if (!item->is_free)
            status->TotalAllocated += item->block_size;
        else if (item->kind == FastMM_SmallBlock)
            status->FreeSmall += item->block_size;
        else
            status->FreeBig += item->block_size;
        break;
    }
    return 0;
}

int FM5_CALL FastMM_GetHeapStatus(FastMM_HeapStatus *status, unsigned timeout_ms)
{
    if (!status)
        return 0;
    FastMM_HeapStatus result = { 0 };
    int complete = fm5_walk_all(visit_for_status, &result, timeout_ms) == FM5_WALK_COMPLETE;
    result.TotalCommitted = result.TotalAddrSpace;
    result.TotalFree = result.FreeSmall + result.FreeBig + result.Unused;
    size_t accounted = result.TotalAllocated + result.TotalFree;
    result.Overhead = result.TotalAddrSpace > accounted ? result.TotalAddrSpace - accounted : 0;
    *status = result;
    return complete;
}

int FM5_CALL FastMM_GetUsageSummary(FastMM_UsageSummary *summary)
{
    if (!summary)
        return 0;
    FastMM_HeapStatus status;
    int complete = FastMM_GetHeapStatus(&status, 1000);
    summary->AllocatedBytes = status.TotalAllocated;
    summary->OverheadBytes = status.TotalAddrSpace - status.TotalAllocated;
    summary->EfficiencyPercentage =
        status.TotalAddrSpace ? 100.0 * (double)status.TotalAllocated / (double)status.TotalAddrSpace : 100.0;
    return complete;
}
