# SPDX-License-Identifier: BSD-3-Clause
# mod-geoip (mode: subnet) answers: one CDN node per partition's mapped /32.
video.cdn.test:
  - net: 198.51.100.1/32
    A: 203.0.113.1
  - net: 198.51.100.2/32
    A: 203.0.113.2
  - net: 198.51.100.3/32
    A: 203.0.113.3
static.cdn.test:
  - net: 198.51.100.1/32
    A: 203.0.113.1
  - net: 198.51.100.2/32
    A: 203.0.113.2
  - net: 198.51.100.3/32
    A: 203.0.113.3
