/*
 * reports.h - what reports.c owns: the usage and capacity reports (docs/reports.md).
 */
#ifndef DOCKET_CONTROLLER_REPORTS_H
#define DOCKET_CONTROLLER_REPORTS_H

struct ctl_req;

void h_report_usage(struct ctl_req *r);
void h_report_capacity(struct ctl_req *r);

#endif
