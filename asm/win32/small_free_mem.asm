; FastMM_FreeMem for Win32. C twin: fm5_c_free_mem (src/memory_manager.c) with fm5_small_free
; (src/small_blocks.c). Frees a live small block under its manager's lock, or queues it on the manager's
; pending-free list when the lock is busy, so that a free never waits. Everything else - medium and
; large blocks, debug blocks, erase mode, the block that would empty its span, any pointer that fails a
; check - tail-jumps to the C twin, which decides again from scratch and reports misuse.
; In: [esp + 4] = pointer. Out: eax = 0, or the twin's result.

%include "fm5_layout.inc"
%include "routine.inc"
%include "small_block_validation.inc"

extern fm5_c_free_mem
extern fm5_small_drain_pending_and_unlock
extern fm5_erase_freed_active

%define SAVED 8                         ; ebx and esi

ROUTINE FastMM_FreeMem
    cmp dword [fm5_erase_freed_active], 0
    jne .c_twin
    mov ecx, [esp + 4]
    push ebx
    push esi
    LIVE_SMALL_BLOCK .restore_then_c_twin
    ; esi = span, ebx = manager
    cmp dword [ebx + FM5_MANAGER_LOCKED], 0
    jne .queue
    mov eax, 1
    xchg eax, [ebx + FM5_MANAGER_LOCKED]
    test eax, eax
    jnz .queue
    ; Under the lock: a block freed meanwhile by another thread is the C twin's to report.
    test byte [ecx - 2], FM5_STATUS_FREE
    jnz .unlock_then_c_twin
    ; The last block of a span releases the span: the C twin's work.
    cmp dword [esi + FM5_SPAN_BLOCKS_IN_USE], 1
    jbe .unlock_then_c_twin
    dec dword [esi + FM5_SPAN_BLOCKS_IN_USE]
    or word [ecx - 2], FM5_STATUS_FREE
    mov eax, [esi + FM5_SPAN_FIRST_FREE_BLOCK]
    mov [ecx], eax
    mov [esi + FM5_SPAN_FIRST_FREE_BLOCK], ecx
    test eax, eax
    jnz .span_listed
    ; The span had no free block: it goes first on the manager's partially-free list (the manager is
    ; the list's sentinel).
    mov eax, [ebx + FM5_MANAGER_FIRST_PARTIALLY_FREE]
    mov [esi + FM5_SPAN_NEXT_PARTIALLY_FREE], eax
    mov [esi + FM5_SPAN_PREV_PARTIALLY_FREE], ebx
    mov [eax + FM5_SPAN_PREV_PARTIALLY_FREE], esi
    mov [ebx + FM5_MANAGER_FIRST_PARTIALLY_FREE], esi
.span_listed:
    cmp dword [ebx + FM5_MANAGER_PENDING_FREE_LIST], 0
    jne .drain_pending
    mov dword [ebx + FM5_MANAGER_LOCKED], 0
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
    ; Busy manager: mark the block free first, so that any second free of it fails, then push it.
    movzx eax, word [ecx - 2]
    test al, FM5_STATUS_FREE
    jnz .restore_then_c_twin
    lea edx, [eax + FM5_STATUS_FREE]
    lock cmpxchg [ecx - 2], dx
    jne .restore_then_c_twin
    mov eax, [ebx + FM5_MANAGER_PENDING_FREE_LIST]
.push:
    cmp eax, ecx
    je .queued
    mov [ecx], eax
    lock cmpxchg [ebx + FM5_MANAGER_PENDING_FREE_LIST], ecx
    jne .push
.queued:
    xor eax, eax
    pop esi
    pop ebx
    ret
.unlock_then_c_twin:
    mov dword [ebx + FM5_MANAGER_LOCKED], 0
.restore_then_c_twin:
    pop esi
    pop ebx
.c_twin:
    jmp fm5_c_free_mem
END_ROUTINE FastMM_FreeMem
