/* Settings read from the environment at start-up, for programs that cannot call the API. */
#ifndef FM5_ENVIRONMENT_SETTINGS_H
#define FM5_ENVIRONMENT_SETTINGS_H

/* FM5_DEBUG=1 enters debug mode and turns on the leak report at unload; FM5_STACK_DEPTH=n sets the
 * stack-trace depth (0..64); FM5_LOG=path sets the event log file; FM5_LEAK_REPORT=1 or 0 turns the
 * leak report at unload on or off. */
void fm5_apply_environment_settings(void);

#endif
