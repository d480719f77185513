; FastMM_FreeMem for Win64. C twin: fm5_c_free_mem (src/api/memory_manager.c) with fm5_small_free
; (src/blocks/small_blocks.c), and fm5_thread_cache_free in front of them. With thread caches on, a live
; small block goes into the running thread's cache (a full bin or a thread without a usable cache goes
; to the C twin). Otherwise it frees a live small block under its manager's lock, or queues it on the
; manager's pending-free list when the lock is busy, so that a free never waits. Everything else -
; medium and large blocks, debug blocks, erase mode, the block that would empty its span, any pointer
; that fails a check - tail-jumps to the C twin, which decides again from scratch and reports misuse (a
; block whose status word says medium, large or debug enters it past the small-block tests already
; made).
; In: rcx = pointer. Out: eax = 0, or the twin's result.

default rel
%include "fm5_layout.inc"
%include "routine.inc"
%include "small_block_validation.inc"
%include "small_block_lists.inc"

extern fm5_c_free_mem
extern fm5_c_free_mem_slow_path
extern fm5_small_drain_pending_and_unlock
extern fm5_erase_freed_active
extern fm5_thread_cache_epoch
extern fm5_os_thread_slot_offset
extern fm5_sole_claimer

ROUTINE FastMM_FreeMem
    LIVE_SMALL_BLOCK .c_twin, fm5_c_free_mem_slow_path
.proved:                                ; rcx = block, rdx = span, r8 = manager
    CACHE_PUSH rcx, r9, r10, rax, eax, r11, r11d, r11w, .no_cache, .c_twin, rdx
    xor eax, eax
    ret
.no_cache:
    ; erase mode holds the caches' epoch even (blocks/thread_cache.h): only the managers' free tests it
    cmp dword [fm5_erase_freed_active], 0
    jne .c_twin
    ; the managers' claims are compare-and-swaps, which another thread may make only once claims are
    ; shared (blocks/claims.h): the C twin shares them first
    cmp qword [fm5_sole_claimer], FM5_CLAIMS_SHARED
    jne .c_twin
    TRY_LOCK r8, eax, .queue
    FREE_UNDER_LOCK rcx, rdx, r8, rax, .unlock_then_c_twin
    cmp qword [r8 + FM5_MANAGER_PENDING_FREE_LIST], 0
    jne .drain_pending
    UNLOCK r8
    xor eax, eax
    ret
.drain_pending:
    mov rcx, r8
    jmp fm5_small_drain_pending_and_unlock
.queue:
    QUEUE_PENDING_FREE rcx, r8, rax, eax, r9d, r9w, .c_twin
    xor eax, eax
    ret
.unlock_then_c_twin:
    UNLOCK r8
.c_twin:
    jmp fm5_c_free_mem
END_ROUTINE FastMM_FreeMem

; fm5_free_proved_small_block (C twin: fm5_c_free_proved_small_block, src/api/asm_twins.h): FreeMem of a
; block its caller proved a live small block, entered past the proof.
; In: rcx = pointer, rdx = its span, r8 = the span's manager. Out: eax = 0, or the twin's result.
ROUTINE fm5_free_proved_small_block
    ; still a live small block's status word (fm5_c_free_proved_small_block says why)
    movzx eax, word [rcx + FM5_STATUS_WORD_OFFSET]
    and eax, FM5_STATUS_SMALL | FM5_STATUS_FREE | FM5_STATUS_HAS_DEBUG_INFO
    cmp eax, FM5_STATUS_SMALL
    jne FastMM_FreeMem.c_twin
    jmp FastMM_FreeMem.proved
END_ROUTINE fm5_free_proved_small_block
