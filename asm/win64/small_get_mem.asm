; FastMM_GetMem for Win64. C twin: fm5_c_get_mem (src/api/memory_manager.c) with the first pass of
; fm5_small_get_mem (src/blocks/small_blocks.c): for each arena in turn, take the first free block of
; the first partially-free span when the manager is idle and its lock can be had, else feed the next
; block from the end of the current span lock-free. What the first pass cannot do here - blocks waiting
; on a pending-free list, a freed debug block that must be checked before reuse, a new span, sizes above
; the small range (straight to the medium and large managers), debug and erase modes, a shared manager
; in use (api/sharing.h) - tail-jumps to the C twin, which starts over.
; The first pass starts at arena 0, or, for a class that arena affinity has taken over
; (src/blocks/arena_affinity.h), at the thread's own arena, wrapping once through the others.
; With thread caches on (src/blocks/thread_cache.h), a small request is the newest cached block of its
; class; a thread without a usable cache, or whose bin is empty, goes to the C twin.
; In: rcx = size. Out: rax = the block.

default rel
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
    cmp rcx, FM5_MAXIMUM_SMALL_USER_SIZE
    jbe .small
    GET_MEM_DIVERTED eax, .c_twin
    jmp fm5_release_get_mem
.small:
    lea rax, [rcx + 1]
    shr rax, FM5_SMALL_GRANULARITY_SHIFT
    lea rdx, [fm5_small_lookup]
    movzx eax, byte [rdx + rax]         ; the class slot
    CACHE_POP rax, r9, r10, rdx, r11, r11d, .no_cache, .c_twin
    mov rax, rdx
    ret
.no_cache:
    ; caches off, or a class that is not cached: the modes an odd epoch rules out are tested here
    GET_MEM_DIVERTED r9d, .c_twin
    ; the manager is needed only here, off the cache's path
    mov r8d, eax
    shl r8d, FM5_SMALL_MANAGER_SIZE_SHIFT
    lea rdx, [fm5_small_managers]
    add r8, rdx                         ; the class's manager in arena 0
    mov r11d, [fm5_small_arena_count]   ; arenas left to try
    cmp byte [r8 + FM5_MANAGER_AFFINITY_ACTIVE], 0
    jne .affinity
.arena:
    WORTH_LOCKING r8, .feed, .c_twin
    TRY_LOCK r8, eax, .feed
    TAKE_FIRST_FREE_BLOCK r8, rdx, rax, r9, r10, .unlock_then_feed, .unlock_then_c_twin
    UNLOCK r8
    ret
.unlock_then_feed:
    UNLOCK r8
.feed:
    ; feed: low dword the offset of the block last handed out, high dword a change counter. The span
    ; is read before the compare-and-swap that proves it still belongs to that offset.
    mov rax, [r8 + FM5_MANAGER_FEED]
.feed_again:
    cmp eax, FM5_SPAN_HEADER_SIZE
    jbe .next_arena
    mov r9, [r8 + FM5_MANAGER_FEED_SPAN]
    movzx r10d, word [r8 + FM5_MANAGER_BLOCK_SIZE]
    mov edx, eax
    sub edx, r10d
    mov r10, rax
    shr r10, 32
    inc r10
    shl r10, 32
    or r10, rdx
    lock cmpxchg [r8 + FM5_MANAGER_FEED], r10
    jne .feed_again
    lea rax, [r9 + rdx]
    and word [rax + FM5_STATUS_WORD_OFFSET], ~FM5_STATUS_FREE & 0xFFFF
    ret
.next_arena:
    NEXT_ARENA r8, r9, r9d
    dec r11d
    jnz .arena
    jmp .c_twin
.affinity:
    AFFINITY_FIRST_ARENA eax, r10, r9, r9d, rdx, edx, r8, .arena
.unlock_then_c_twin:
    UNLOCK r8
.c_twin:
    jmp fm5_c_get_mem
END_ROUTINE FastMM_GetMem
