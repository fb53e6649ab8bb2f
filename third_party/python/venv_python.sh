#!/bin/sh
# The Python interpreter of Bazel's Python toolchain (see BUILD here).
#
# Runs $ALBERT_TF_PYTHON if set, else <repo>/.venv/bin/python, where <repo> is
# found from this script's real location (Bazel runs it through a runfiles
# symlink that points into the checkout).
set -eu
here=$(dirname "$(readlink -f "$0")")
repo=$(dirname "$(dirname "$here")")
python=${ALBERT_TF_PYTHON:-$repo/.venv/bin/python}
if [ ! -x "$python" ]; then
    echo "venv_python.sh: no Python interpreter at $python." >&2
    echo "  Create the virtualenv with 'make setup', or point Bazel at another one:" >&2
    echo "  ALBERT_TF_PYTHON=/path/to/bin/python bazel test //...  (see BAZEL_NOTES.md)" >&2
    exit 1
fi
exec "$python" "$@"
