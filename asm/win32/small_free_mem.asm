; FastMM_FreeMem for Win32. C twin: fm5_c_free_mem (src/api/memory_manager.c) with fm5_small_free
; (src/blocks/small_blocks.c), and fm5_thread_cache_free in front of them. With thread caches on, a live
; small block goes into the running thread's cache (a full bin or a thread without a usable cache goes
; to the C twin). Otherwise it frees a live small block under its manager's lock, or queues it on the
; manager's pending-free list when the lock is busy, so that a free never waits. Everything else -
; medium and large blocks, debug blocks, erase mode, the block that would empty its span, any pointer
; that fails a check - tail-jumps to the C twin, which decides again from scratch and reports misuse (a
; block whose status word says medium, large or debug enters it past the small-block tests already
; made).
; In: [esp + 4] = pointer. Out: eax = 0, or the twin's result.

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

%define SAVED 8                         ; ebx and esi

ROUTINE FastMM_FreeMem
    mov ecx, [esp + 4]
    push ebx
    push esi
    LIVE_SMALL_BLOCK .restore_then_c_twin, .restore_then_slow_path
.proved:                                ; ecx = block, esi = span, ebx = manager
    push edi
    CACHE_PUSH ecx, edx, edi, eax, eax, esi, esi, si, .no_cache, .cache_miss, esi
    pop edi
    xor eax, eax
    pop esi
    pop ebx
    ret
.cache_miss:
    pop edi
    jmp .restore_then_c_twin
.no_cache:
    pop edi
    ; erase mode holds the caches' epoch even (blocks/thread_cache.h): only the managers' free tests it
    cmp dword [fm5_erase_freed_active], 0
    jne .restore_then_c_twin
    ; the managers' claims are compare-and-swaps, which another thread may make only once claims are
    ; shared (blocks/claims.h): the C twin shares them first
    cmp dword [fm5_sole_claimer], FM5_CLAIMS_SHARED
    jne .restore_then_c_twin
    TRY_LOCK ebx, eax, .queue
    FREE_UNDER_LOCK ecx, esi, ebx, eax, .unlock_then_c_twin
    cmp dword [ebx + FM5_MANAGER_PENDING_FREE_LIST], 0
    jne .drain_pending
    UNLOCK ebx
    xor eax, eax
    pop esi
    pop ebx
    ret
.drain_pending:
    ; cdecl lets a routine reuse its argument's slot: the pointer's slot becomes the manager argument.
    mov [esp + SAVED + 4], ebx
    pop esi
    pop ebx
    jmp fm5_small_drain_pending_and_unlock
.queue:
    QUEUE_PENDING_FREE ecx, ebx, eax, eax, edx, dx, .restore_then_c_twin
    xor eax, eax
    pop esi
    pop ebx
    ret
.unlock_then_c_twin:
    UNLOCK ebx
.restore_then_c_twin:
    pop esi
    pop ebx
.c_twin:
    jmp fm5_c_free_mem
.restore_then_slow_path:
    pop esi
    pop ebx
    jmp fm5_c_free_mem_slow_path
END_ROUTINE FastMM_FreeMem

; fm5_free_proved_small_block (C twin: fm5_c_free_proved_small_block, src/api/asm_twins.h): FreeMem of a
; block its caller proved a live small block, entered past the proof with FastMM_FreeMem's registers.
; In: [esp + 4] = pointer, [esp + 8] = its span, [esp + 12] = the span's manager. Out: eax = 0, or the
; twin's result (FreeMem's paths that leave for C see the pointer's slot where they expect it).
ROUTINE fm5_free_proved_small_block
    mov ecx, [esp + 4]
    ; still a live small block's status word (fm5_c_free_proved_small_block says why)
    movzx eax, word [ecx + FM5_STATUS_WORD_OFFSET]
    and eax, FM5_STATUS_SMALL | FM5_STATUS_FREE | FM5_STATUS_HAS_DEBUG_INFO
    cmp eax, FM5_STATUS_SMALL
    jne FastMM_FreeMem.c_twin
    push ebx
    push esi
    mov esi, [esp + SAVED + 8]
    mov ebx, [esp + SAVED + 12]
    jmp FastMM_FreeMem.proved
END_ROUTINE fm5_free_proved_small_block
