; FastMM_FreeMem for Win64. C twin: fm5_c_free_mem (src/memory_manager.c) with fm5_small_free
; (src/small_blocks.c). Frees a live small block under its manager's lock, or queues it on the manager's
; pending-free list when the lock is busy, so that a free never waits. Everything else - medium and
; large blocks, debug blocks, erase mode, the block that would empty its span, any pointer that fails a
; check - tail-jumps to the C twin, which decides again from scratch and reports misuse.
; In: rcx = pointer. Out: eax = 0, or the twin's result.

default rel
%include "fm5_layout.inc"
%include "routine.inc"
%include "small_block_validation.inc"

extern fm5_c_free_mem
extern fm5_small_drain_pending_and_unlock
extern fm5_erase_freed_active

ROUTINE FastMM_FreeMem
    cmp dword [fm5_erase_freed_active], 0
    jne .c_twin
    LIVE_SMALL_BLOCK .c_twin
    ; rdx = span, r8 = manager
    cmp dword [r8 + FM5_MANAGER_LOCKED], 0
    jne .queue
    mov eax, 1
    xchg eax, [r8 + FM5_MANAGER_LOCKED]
    test eax, eax
    jnz .queue
    ; Under the lock: a block freed meanwhile by another thread is the C twin's to report.
    test byte [rcx - 2], FM5_STATUS_FREE
    jnz .unlock_then_c_twin
    ; The last block of a span releases the span: the C twin's work.
    cmp dword [rdx + FM5_SPAN_BLOCKS_IN_USE], 1
    jbe .unlock_then_c_twin
    dec dword [rdx + FM5_SPAN_BLOCKS_IN_USE]
    or word [rcx - 2], FM5_STATUS_FREE
    mov rax, [rdx + FM5_SPAN_FIRST_FREE_BLOCK]
    mov [rcx], rax
    mov [rdx + FM5_SPAN_FIRST_FREE_BLOCK], rcx
    test rax, rax
    jnz .span_listed
    ; The span had no free block: it goes first on the manager's partially-free list (the manager is
    ; the list's sentinel).
    mov rax, [r8 + FM5_MANAGER_FIRST_PARTIALLY_FREE]
    mov [rdx + FM5_SPAN_NEXT_PARTIALLY_FREE], rax
    mov [rdx + FM5_SPAN_PREV_PARTIALLY_FREE], r8
    mov [rax + FM5_SPAN_PREV_PARTIALLY_FREE], rdx
    mov [r8 + FM5_MANAGER_FIRST_PARTIALLY_FREE], rdx
.span_listed:
    cmp qword [r8 + FM5_MANAGER_PENDING_FREE_LIST], 0
    jne .drain_pending
    mov dword [r8 + FM5_MANAGER_LOCKED], 0
    xor eax, eax
    ret
.drain_pending:
    mov rcx, r8
    jmp fm5_small_drain_pending_and_unlock
.queue:
    ; Busy manager: mark the block free first, so that any second free of it fails, then push it.
    movzx eax, word [rcx - 2]
    test al, FM5_STATUS_FREE
    jnz .c_twin
    lea r9d, [rax + FM5_STATUS_FREE]
    lock cmpxchg [rcx - 2], r9w
    jne .c_twin
    mov rax, [r8 + FM5_MANAGER_PENDING_FREE_LIST]
.push:
    cmp rax, rcx
    je .queued
    mov [rcx], rax
    lock cmpxchg [r8 + FM5_MANAGER_PENDING_FREE_LIST], rcx
    jne .push
.queued:
    xor eax, eax
    ret
.unlock_then_c_twin:
    mov dword [r8 + FM5_MANAGER_LOCKED], 0
.c_twin:
    jmp fm5_c_free_mem
END_ROUTINE FastMM_FreeMem
