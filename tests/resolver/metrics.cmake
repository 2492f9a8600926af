# SPDX-License-Identifier: BSD-3-Clause
# server.metrics: the exposition writer (escaping, cumulative histograms) and the HTTP endpoint on loopback.
partdns_unit_test(test_metrics ${CMAKE_CURRENT_LIST_DIR}/test_metrics.c partdns_resolver)
