#!/usr/bin/env bash
# Run inside the guest (run-guest.sh): vkms is the DRM device, with its
# writeback connector, as seen by drm_info and by libdrm's modetest.
set -euo pipefail

for tool in drm_info modetest python3; do
	if ! command -v "$tool" >/dev/null; then
		echo "guest-smoke: no $tool (packages drm-info, libdrm-tests, python3)"
		exit 77
	fi
done
# Debian's own Python when there is one: a wrapper earlier in PATH (pyenv's
# shim) costs seconds of emulated CPU at every start.
python=python3
if [ -x /usr/bin/python3 ]; then
	python=/usr/bin/python3
fi

if [ ! -c /dev/dri/card0 ]; then
	echo "FAIL: no /dev/dri/card0"
	exit 1
fi
echo "ok: /dev/dri/card0"

drm_info -j >/tmp/drm_info.json
"$python" - /tmp/drm_info.json <<'PY'
import json, sys
# DRM_MODE_CONNECTOR_VIRTUAL and DRM_MODE_CONNECTOR_WRITEBACK (drm_mode.h)
VIRTUAL, WRITEBACK = 15, 18
devices = json.load(open(sys.argv[1]))
dev = devices.get('/dev/dri/card0')
if dev is None:
    sys.exit(f'FAIL: drm_info lists no /dev/dri/card0 (it lists {sorted(devices)})')
driver = dev['driver']['name']
if driver != 'vkms':
    sys.exit(f'FAIL: /dev/dri/card0 is driven by {driver!r}, not vkms')
types = [c['type'] for c in dev['connectors']]
if WRITEBACK not in types:
    sys.exit(f'FAIL: vkms has no writeback connector (connector types {types})')
if VIRTUAL not in types:
    sys.exit(f'FAIL: vkms has no virtual connector (connector types {types})')
print(f"ok: drm_info: driver vkms, connector types {types}, {len(dev['planes'])} planes")
PY

connectors=$(modetest -M vkms -c)
if ! grep -qw 'Virtual-1' <<<"$connectors"; then
	echo "FAIL: modetest -M vkms -c does not list Virtual-1:"
	echo "$connectors"
	exit 1
fi
echo "ok: modetest lists Virtual-1"
