; FastMM_ReallocMem for Win64: the in-place small-block fast path of FastMM5 PR #98. C twin:
; fm5_c_realloc_mem (src/api/memory_manager.c), whose first test is the same rule
; (src/blocks/realloc_rules.h): a live small block whose new size still fits its class, and is not so
; small that the block would be mostly empty, is returned at once. One that must move to another small
; class moves here through the running thread's cache when it can: the newest cached block of the new
; class, the copy, the old block into its own bin, as the twin's mover (move_small_block) does through
; GetMem and the proved free but without their entry tests and calls. What the cache cannot serve before
; the new block is taken goes to that mover (fm5_c_realloc_moving_small_block), which does not identify
; the block again; an old block the cache refuses after it goes to FreeMem
; (fm5_c_free_moved_small_block), which decides again from scratch. Everything else tail-jumps to the C
; twin. Win32's ReallocMem moves the same way.
; In: rcx = pointer, rdx = new size. Out: rax = the block.

default rel
%include "fm5_layout.inc"
%include "routine.inc"
%include "small_block_validation.inc"
%include "small_block_lists.inc"
%include "small_block_copy.inc"

extern fm5_c_realloc_mem
extern fm5_c_realloc_moving_small_block
extern fm5_c_free_moved_small_block
extern fm5_debug_mode_active
extern fm5_small_lookup
extern fm5_thread_cache_epoch
extern fm5_os_thread_slot_offset
extern fm5_cpu_has_fast_strings

; The usable bytes of the smallest class, whose block is one granule (classes are multiples of the
; granule, ascending: blocks/small_block_classes.c), less the status word: two 8-byte moves copy them.
; A larger class has a granule more, at least 16 bytes on Win64, which the 16-byte moves below need.
%define MINIMUM_USABLE ((1 << FM5_SMALL_GRANULARITY_SHIFT) - FM5_SMALL_HEADER_SIZE)
%if (1 << FM5_SMALL_GRANULARITY_SHIFT) < 16 || MINIMUM_USABLE < 8
%error "the small move copies a granule-sized class with two 8-byte moves and larger ones with 16-byte moves"
%endif

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
    ; rcx = block, rdx = span, r11 = new size. A new size in the small range; the erase modes and a
    ; shared manager hold the caches' epoch even (blocks/thread_cache.h), so the cache's pop and push
    ; are their tests (debug mode was tested above).
    cmp r11, FM5_MAXIMUM_SMALL_USER_SIZE
    ja .c_mover
    movq xmm5, r11                      ; the new size, while CACHE_POP needs every free register
    lea r9, [r11 + 1]
    shr r9, FM5_SMALL_GRANULARITY_SHIFT
    lea rax, [fm5_small_lookup]
    movzx r9d, byte [rax + r9]          ; the new class slot
    CACHE_POP r9, r10, rax, r8, r11, r11d, .c_mover_size_in_xmm5, .c_mover_size_in_xmm5
    ; r8 = the new block, now the thread's; copy min(new size, old usable) bytes. Every small block has
    ; MINIMUM_USABLE bytes at least, and one with more has 16 more: no load or store passes either
    ; block's usable bytes (the new block's neighbour's status word lies right after them).
    movq r11, xmm5
    movzx eax, word [rdx + FM5_SPAN_BLOCK_SIZE]
    sub eax, FM5_SMALL_HEADER_SIZE
    cmp r11, rax
    cmova r11, rax
    cmp r11, MINIMUM_USABLE
    jbe .copy_minimum
    ; a kilobyte or more with `rep movsb` where the processor has fast strings (realloc_rules.h)
    cmp r11, FM5_SMALL_COPY_BY_STRING_MINIMUM
    jb .copy_in_units
    cmp byte [fm5_cpu_has_fast_strings], 0
    jne .copy_by_string
.copy_in_units:
    ; 16-byte moves from the start while another fits before the count, then the 16 bytes ending at it
    ; (a count of 15 copies 16: both blocks have 30 usable bytes then)
    mov eax, 16
    cmp r11, rax
    cmovb r11, rax
    COPY_IN_UNITS movdqu, xmm0, 16, rcx, r8, r11, rax, r9
    jmp .copied
.copy_by_string:
    call fm5_small_copy_by_string
    jmp .copied
.copy_minimum:
    mov rax, [rcx]
    mov r9, [rcx + MINIMUM_USABLE - 8]
    mov [r8], rax
    mov [r8 + MINIMUM_USABLE - 8], r9
.copied:
    ; the old block into its bin (the claim, then its link over the bytes just copied)
    CACHE_PUSH rcx, r9, r10, rax, eax, r11, r11d, r11w, .free_in_c, .free_in_c, rdx
    mov rax, r8
    ret
.free_in_c:
    ; rcx = the old block (the span is not read: a lost claim may have released it), r8 = the new one
    mov rdx, r8
    jmp fm5_c_free_moved_small_block
.c_mover_size_in_xmm5:
    movq r11, xmm5
.c_mover:
    mov rdx, r11
    jmp fm5_c_realloc_moving_small_block
.c_twin:
    mov rdx, r11
    jmp fm5_c_realloc_mem
END_ROUTINE FastMM_ReallocMem

; fm5_small_copy_by_string: ReallocMem's copy of a moving small block with `rep movsb`, which needs rsi
; and rdi (saved on the stack, as its unwind data says: routine.inc). Its own convention, for its one
; caller: in rcx = from, r8 = to, r11 = the count of bytes; rcx, rdx, r8 and r11 kept, r9 changed.
ROUTINE_SAVING_RSI_RDI fm5_small_copy_by_string
    mov r9, rcx
    mov rsi, rcx
    mov rdi, r8
    mov rcx, r11
    rep movsb
    mov rcx, r9
    pop rdi
    pop rsi
    ret
END_ROUTINE_SAVING_RSI_RDI fm5_small_copy_by_string
