/* Setting fm5 up before the first allocation, and what it does when the DLL unloads. */
#ifndef FM5_STARTUP_H
#define FM5_STARTUP_H

/* Idempotent. The DLL calls it from DllMain; a static build calls it before anything else. It ends by
 * applying the environment settings: FM5_DEBUG=1 enters debug mode and turns on the leak report at
 * unload; FM5_STACK_DEPTH=n sets the stack-trace depth (0..64); FM5_LOG=path sets the event log file;
 * FM5_LEAK_REPORT=1 or 0 turns the leak report at unload on or off; in the DLL, FM5_REDIRECT=1 calls
 * fm5_redirect_crt; FM5_SMALL_ARENAS, FM5_MEDIUM_ARENAS and FM5_LARGE_ARENAS set the arena counts and
 * FM5_ARENA_AFFINITY=1 turns adaptive small-block arena affinity on (fm5.h), before any of the rest. */
void fm5_initialize(void);
/* What the DLL does when it unloads: stops sharing (api/sharing.h), reports leaks when asked to,
 * unregisters the Win64 unwinder's module notification and removes the release guard. Called once,
 * from DllMain's process detach or the shared object's destructor (or BorlndMM.dll's DllMain, which
 * builds on fm5_static). */
void fm5_shut_down(void);

#endif
