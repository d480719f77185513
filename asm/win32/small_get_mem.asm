; FastMM_GetMem for Win32. C twin: fm5_c_get_mem (src/api/memory_manager.c) with
; fm5_thread_cache_get_mem and the first pass of fm5_small_get_mem (src/blocks/small_blocks.c): for each
; arena in turn, take the first free block of the first partially-free span when the manager is idle and
; its lock can be had, else feed the next block from the end of the current span lock-free (cmpxchg8b on
; the offset and its change counter). What the first pass cannot do here - blocks waiting on a
; pending-free list, a freed debug block that must be checked before reuse, a new span, sizes above the
; small range (straight to the medium and large managers), debug and erase modes, a shared manager in
; use (api/sharing.h) - tail-jumps to the C twin, which starts over. The first pass starts at arena 0,
; or, for a class that arena affinity has taken over (src/blocks/arena_affinity.h), at the thread's own
; arena, wrapping once through the others.
; With thread caches on (src/blocks/thread_cache.h), a small request is the newest cached block of its
; class; a thread without a usable cache, or whose bin is empty, goes to the C twin.
; In: [esp + 4] = size. Out: eax = the block.

%include "fm5_layout.inc"
%include "routine.inc"
%include "small_block_lists.inc"

extern fm5_c_get_mem
extern fm5_release_get_mem
extern fm5_small_lookup
extern fm5_small_managers
extern fm5_debug_mode_active
extern fm5_erase_allocated_active
extern fm5_using_shared_manager
extern fm5_small_arena_count
extern fm5_affinity_slots
extern fm5_affinity_slot_mask
extern fm5_thread_cache_epoch
extern fm5_os_thread_slot_offset

ROUTINE FastMM_GetMem
    mov ecx, [esp + 4]
    cmp ecx, FM5_MAXIMUM_SMALL_USER_SIZE
    jbe .small
    GET_MEM_DIVERTED eax, .c_twin
    jmp fm5_release_get_mem
.small:
    push ebx
    push edi
    inc ecx
    shr ecx, FM5_SMALL_GRANULARITY_SHIFT
    movzx edi, byte [fm5_small_lookup + ecx]   ; the class slot
    CACHE_POP edi, edx, ecx, eax, ebx, ebx, .no_cache, .pop_then_c_twin
    pop edi
    pop ebx
    ret
.no_cache:
    ; caches off, or a class that is not cached: the modes an odd epoch rules out are tested here
    GET_MEM_DIVERTED eax, .pop_then_c_twin
    ; esi (the manager) is saved and set only here, off the cache's path
    push esi
    mov esi, edi
    shl esi, FM5_SMALL_MANAGER_SIZE_SHIFT
    add esi, fm5_small_managers         ; the class's manager in arena 0
    ; The count of arenas left to try stays on the stack: ebp keeps the caller's frame chain.
    push dword [fm5_small_arena_count]
    cmp byte [esi + FM5_MANAGER_AFFINITY_ACTIVE], 0
    jne .affinity
.arena:
    WORTH_LOCKING esi, .feed, .restore_then_c_twin
    TRY_LOCK esi, eax, .feed
    TAKE_FIRST_FREE_BLOCK esi, edx, eax, ecx, ebx, .unlock_then_feed, .unlock_then_c_twin
    UNLOCK esi
    jmp .return
.unlock_then_feed:
    UNLOCK esi
.feed:
    ; feed: low dword the offset of the block last handed out, high dword a change counter. The two
    ; halves are read separately: a torn pair fails the compare-and-swap. The span is read before the
    ; compare-and-swap that proves it still belongs to that offset.
    mov eax, [esi + FM5_MANAGER_FEED]
    mov edx, [esi + FM5_MANAGER_FEED + 4]
.feed_again:
    cmp eax, FM5_SPAN_HEADER_SIZE
    jbe .next_arena
    mov edi, [esi + FM5_MANAGER_FEED_SPAN]
    movzx ebx, word [esi + FM5_MANAGER_BLOCK_SIZE]
    neg ebx
    add ebx, eax
    lea ecx, [edx + 1]
    lock cmpxchg8b [esi + FM5_MANAGER_FEED]
    jne .feed_again
    lea eax, [edi + ebx]
    and word [eax + FM5_STATUS_WORD_OFFSET], ~FM5_STATUS_FREE & 0xFFFF
.return:
    add esp, 4
    pop esi
    pop edi
    pop ebx
    ret
.next_arena:
    NEXT_ARENA esi, eax, eax
    dec dword [esp]
    jnz .arena
    jmp .restore_then_c_twin
.affinity:
    AFFINITY_FIRST_ARENA edi, ecx, ebx, ebx, edx, edx, esi, .arena
.unlock_then_c_twin:
    UNLOCK esi
.restore_then_c_twin:
    add esp, 4
    pop esi
.pop_then_c_twin:                       ; the cache's paths: esi was not saved
    pop edi
    pop ebx
.c_twin:
    jmp fm5_c_get_mem
END_ROUTINE FastMM_GetMem
