/* Setting up fm5's managers before the first allocation. */
#ifndef FM5_INITIALIZATION_H
#define FM5_INITIALIZATION_H

/* Idempotent. The DLL calls it from DllMain; a static build calls it before anything else. */
void fm5_initialize(void);

#endif
