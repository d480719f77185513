/* Waiting for a lock on the rare paths that must have it. */
#include "platform.h"

int fm5_lock_with_timeout(fm5_lock *lock, DWORD timeout_ms)
{
    DWORD start = GetTickCount();
    for (;;) {
        if (fm5_try_lock(lock))
            return 1;
        if (timeout_ms != INFINITE && GetTickCount() - start >= timeout_ms)
            return 0;
        SwitchToThread();
    }
}
