#!/bin/sh
echo "Bazel's coverage tools are not available offline (third_party/remote_coverage_tools);" \
     "measure coverage with pytest instead." >&2
exit 1
