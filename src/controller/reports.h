/*
 * reports.h - what reports.c owns: the usage and capacity reports (docs/reports.md).
 */
#ifndef DOCKET_CONTROLLER_REPORTS_H
#define DOCKET_CONTROLLER_REPORTS_H

#include <jansson.h>
#include <stdint.h>

struct ctl;
struct ctl_req;

void h_report_usage(struct ctl_req *r);
/* The usage report of calendar month "YYYY-MM" by project, as GET
 * /v1/reports/usage?month= answers it (every project); NULL on a bad month or a store
 * failure. The monthly report of the alert routes (alerts.c) is this. */
json_t *ctl_report_month(struct ctl *c, const char *month, int64_t now);
void h_report_capacity(struct ctl_req *r);

#endif
