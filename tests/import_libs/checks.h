/* Entry points of the shared import-library checks (see import_checks.h). */
#ifndef FM5_CHECKS_H
#define FM5_CHECKS_H

typedef void (*fm5_report_fn)(const char *line);

/* Each returns the number of failed checks; `report` receives one line per failure. */
int fm5_checks_dllimport(fm5_report_fn report);
int fm5_checks_thunk(fm5_report_fn report);

#endif /* FM5_CHECKS_H */
