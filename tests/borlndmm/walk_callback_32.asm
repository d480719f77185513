; A TFastMM_WalkBlocksCallback for test_borlndmm on Win32: procedure(const ABlockInfo) in the register
; convention (eax = the record's address), which hands the address to the cdecl walk_callback_c.
    section .text
    extern walk_callback_c
    global walk_callback_register
walk_callback_register:
    push eax
    call walk_callback_c
    add esp, 4
    ret
