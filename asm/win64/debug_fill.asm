; The debug fill patterns for Win64, and FastMM_AllocMem's zero fill. C twins:
; fm5_c_debug_fill_allocated, fm5_c_debug_fill_freed and fm5_c_zero_fill (src/debug/debug_fill.c).
; Seed 000: from FM5_DEBUG_BULK_FILL_MINIMUM_SIZE user bytes up the fill is memset
; (a tail jump, with memset's arguments in the registers this routine was given); below it, at most
; one byte, one word, one dword and four qwords are stored from the end of the area down, which keeps
; the qword stores at the area's own alignment. The allocated fill of FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE
; bytes and more runs from the end down instead, and the freed fill of FM5_DEBUG_STRING_FILL_MINIMUM_SIZE
; bytes and more is one rep stosb (src/debug/debug_fill.h says why for both).
; In: rcx = user area, rdx = size. The freed fill also writes the freed-object marker into the first
; pointer of an area big enough to be an object.

default rel
%include "fm5_layout.inc"
%include "routine.inc"

extern memset
extern fm5_freed_object_class_table

%define ALLOCATED_FILL_WORD (FM5_DEBUG_ALLOCATED_FILL_BYTE * 0x0101010101010101)
%define FREED_FILL_WORD (FM5_DEBUG_FREED_FILL_BYTE * 0x0101010101010101)

%if FM5_DEBUG_BULK_FILL_MINIMUM_SIZE > 5 * 8
%error "the scalar stores below cover at most four qwords and the odd bytes"
%endif
%if FM5_DEBUG_FREED_OBJECT_SLOT_SIZE != FM5_POINTER_SIZE
%error "on Win64 the marker is the whole slot"
%endif

extern fm5_c_debug_fill_allocated
extern fm5_c_debug_fill_freed

ROUTINE fm5_debug_fill_allocated
    cmp rdx, FM5_DEBUG_BULK_FILL_MINIMUM_SIZE
%if !FM5_BULK_FILL
    jae fm5_c_debug_fill_allocated      ; seed 000's baseline build: the C twin's store loop
%endif
    jae .bulk
    mov rax, ALLOCATED_FILL_WORD
    jmp fm5_debug_fill_scalar_stores
.bulk:
    cmp rdx, FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE
    jae .descending
    mov r8, rdx
    mov edx, FM5_DEBUG_ALLOCATED_FILL_BYTE
    jmp memset
.descending:                            ; C twin: fill_descending, 32 bytes per step from the end down
    mov rax, ALLOCATED_FILL_WORD
    movq xmm0, rax
    punpcklqdq xmm0, xmm0
.next_32:
    sub rdx, 32
    movdqu [rcx + rdx + 16], xmm0
    movdqu [rcx + rdx], xmm0
    cmp rdx, 32
    jae .next_32
    jmp fm5_debug_fill_scalar_stores    ; the 0-31 bytes left at the start
END_ROUTINE fm5_debug_fill_allocated

ROUTINE fm5_debug_fill_freed
%if !FM5_BULK_FILL
    cmp rdx, FM5_DEBUG_BULK_FILL_MINIMUM_SIZE
    jae fm5_c_debug_fill_freed          ; seed 000's baseline build: the C twin's store loop
%endif
    mov rax, FREED_FILL_WORD
    cmp rdx, FM5_DEBUG_FREED_OBJECT_MINIMUM_SIZE
    jb fm5_debug_fill_scalar_stores     ; too small for a marker, and below the bulk size
    lea r8, [fm5_freed_object_class_table + FM5_FREED_OBJECT_MARKER_OFFSET]
    mov [rcx], r8
    ; The bulk/scalar choice goes by the user size, as seed 000 measured it.
    cmp rdx, FM5_DEBUG_BULK_FILL_MINIMUM_SIZE
    lea rcx, [rcx + FM5_DEBUG_FREED_OBJECT_SLOT_SIZE]
    lea rdx, [rdx - FM5_DEBUG_FREED_OBJECT_SLOT_SIZE]
    jb fm5_debug_fill_scalar_stores
    cmp rdx, FM5_DEBUG_STRING_FILL_MINIMUM_SIZE
    jae .string
    mov r8, rdx
    mov edx, FM5_DEBUG_FREED_FILL_BYTE
    jmp memset
.string:                                ; al is the fill byte; rdi is nonvolatile: kept in r9, so that the
    mov r9, rdi                         ; routine stays a leaf without stack use or unwind codes
    mov rdi, rcx
    mov rcx, rdx
    rep stosb
    mov rdi, r9
    ret
END_ROUTINE fm5_debug_fill_freed

; FastMM_AllocMem's zero fill. C twin: fm5_c_zero_fill (memset). From FM5_DEBUG_STRING_FILL_MINIMUM_SIZE
; bytes up one rep stosb, as the freed fill; below it memset, with the registers this routine was given.
; In: rcx = area, rdx = size.
ROUTINE fm5_zero_fill
    cmp rdx, FM5_DEBUG_STRING_FILL_MINIMUM_SIZE
    jae .string
    mov r8, rdx
    xor edx, edx
    jmp memset
.string:                                ; rdi is nonvolatile: kept in r9, as in fm5_debug_fill_freed
    xor eax, eax
    mov r9, rdi
    mov rdi, rcx
    mov rcx, rdx
    rep stosb
    mov rdi, r9
    ret
END_ROUTINE fm5_zero_fill

; C twin: fill_with_scalar_stores (src/debug/debug_fill.c).
; In: rcx = area, rdx = size (below FM5_DEBUG_BULK_FILL_MINIMUM_SIZE), rax = the pattern in every byte.
ROUTINE fm5_debug_fill_scalar_stores
    lea r8, [rcx + rdx]
    test dl, 1
    jz .odd_byte_done
    dec r8
    mov [r8], al
.odd_byte_done:
    test dl, 2
    jz .word_done
    sub r8, 2
    mov [r8], ax
.word_done:
    test dl, 4
    jz .qwords
    sub r8, 4
    mov [r8], eax
.qwords:
    cmp r8, rcx
    jbe .done
    sub r8, 8
    mov [r8], rax
    jmp .qwords
.done:
    ret
END_ROUTINE fm5_debug_fill_scalar_stores
