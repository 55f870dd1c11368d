#!/bin/bash
# Every public header is in the list that tests/headers/meson.build compiles
# alone. Usage: check-list.sh INCLUDE_DIR NAME...
set -euo pipefail
dir=$1
shift
status=0
for path in "$dir"/wlatomic/*.h; do
	name=$(basename "$path" .h)
	if [[ " $* " != *" $name "* ]]; then
		echo "wlatomic/$name.h is not compiled alone: add it to tests/headers/meson.build"
		status=1
	fi
done
exit $status
