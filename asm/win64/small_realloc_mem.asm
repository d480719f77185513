; FastMM_ReallocMem for Win64: the in-place small-block fast path of FastMM5 PR #98. C twin:
; fm5_c_realloc_mem (src/memory_manager.c), whose first test is the same rule (src/realloc_rules.h): a
; live small block whose new size still fits its class, and is not so small that the block would be
; mostly empty, is returned at once; one that must move goes to the twin's mover for small blocks,
; which does not identify it again. Everything else tail-jumps to the C twin.
; In: rcx = pointer, rdx = new size. Out: rax = the block.

default rel
%include "fm5_layout.inc"
%include "routine.inc"
%include "small_block_validation.inc"

extern fm5_c_realloc_mem
extern fm5_c_realloc_moving_small_block
extern fm5_debug_mode_active

ROUTINE FastMM_ReallocMem
    mov r11, rdx
    cmp dword [fm5_debug_mode_active], 0
    jne .c_twin
    LIVE_SMALL_BLOCK .c_twin, .c_twin
    movzx eax, word [rdx + FM5_SPAN_BLOCK_SIZE]
    sub eax, FM5_SMALL_HEADER_SIZE
    cmp r11, rax
    ja .moves
    ; r11 <= usable, so the product cannot overflow
    lea r9, [r11 * FM5_SMALL_DOWNSIZE_FACTOR + FM5_SMALL_DOWNSIZE_CHECK_ADDER]
    cmp r9, rax
    jb .moves
    mov rax, rcx
    ret
.moves:
    mov rdx, r11
    jmp fm5_c_realloc_moving_small_block
.c_twin:
    mov rdx, r11
    jmp fm5_c_realloc_mem
END_ROUTINE FastMM_ReallocMem
