/* FastMM_WalkBlocks, FastMM_GetHeapStatus and FastMM_GetUsageSummary: the public views of a walk. */
#include "fm5.h"
#include "blocks/walk.h"
#include "blocks/block_status.h"
#include "blocks/large_blocks.h"
#include "debug/debug_block_layout.h"

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
        (fm5_status_load(item->address) & FM5_STATUS_HAS_DEBUG_INFO)) {
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
        if (item->is_unused)
            status->Unused += item->block_size;   /* a recycled region's slack */
        else
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
    /* Regions the large-block cache keeps are mapped and in no block: unused address space. */
    size_t cached = fm5_large_cache_bytes();
    result.TotalAddrSpace += cached;
    result.Unused += cached;
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
