#!/bin/bash
# Run in the guest: what the KMS driver found on the card (test-kms --dump)
# against drm_info's view of the same card, read from outside our process:
# CRTCs, planes (type, possible CRTCs, IN_FORMATS), connectors (status,
# size, modes with the preferred first), writeback, cursor size.
# Usage: test-kms-enum.sh TEST_KMS
set -euo pipefail
[ -e /dev/dri/card0 ] || { echo "SKIP: no /dev/dri/card0"; exit 77; }
command -v drm_info >/dev/null || { echo "SKIP: no drm_info (package drm-info)"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$1" --dump >"$dir/ours.json"
drm_info -j /dev/dri/card0 >"$dir/theirs.json"
# The pyenv shim costs seconds under TCG: Debian's interpreter directly.
/usr/bin/python3 - "$dir/ours.json" "$dir/theirs.json" <<'PY'
import json, sys
ours = json.load(open(sys.argv[1]))
theirs = list(json.load(open(sys.argv[2])).values())[0]
errors = []
def check(cond, what):
    if not cond:
        errors.append(what)

check(ours['driver'] == theirs['driver']['name'], 'driver name')
kcrtcs = [c['id'] for c in theirs['crtcs']][:8]
check(ours['crtcs'] == kcrtcs, f'crtcs {ours["crtcs"]} vs {kcrtcs}')
types = {0: 'overlay', 1: 'primary', 2: 'cursor'}
kplanes = {p['id']: p for p in theirs['planes']}
check(sorted(p['id'] for p in ours['planes']) == sorted(kplanes), 'plane ids')
for p in ours['planes']:
    k = kplanes.get(p['id'])
    if not k:
        continue
    props = k['properties']
    check(p['type'] == types[props['type']['value']], f'plane {p["id"]} type')
    check(p['possible_crtcs'] == k['possible_crtcs'], f'plane {p["id"]} possible_crtcs')
    want = set()
    for entry in (props.get('IN_FORMATS') or {}).get('data') or []:
        for f in entry['formats']:
            want.add((f, entry['modifier']))
    got = {tuple(f) for f in p['formats']}
    check(got == want, f'plane {p["id"]} formats+modifiers {sorted(got)} vs {sorted(want)}')
kconns = {c['id']: c for c in theirs['connectors'] if c['type'] != 18}
check(sorted(c['id'] for c in ours['connectors']) == sorted(kconns), 'connector ids')
for c in ours['connectors']:
    k = kconns.get(c['id'])
    if not k:
        continue
    check(c['connected'] == (k['status'] == 1), f'{c["name"]} status')
    check(c['phys'] == [k['phy_width'], k['phy_height']], f'{c["name"]} physical size')
    kmodes = [(m['hdisplay'], m['vdisplay'], m['clock']) for m in k['modes']
              if not m['flags'] & 0x30]
    got = [tuple(m[:3]) for m in c['modes']]
    check(sorted(got) == sorted(kmodes), f'{c["name"]} modes ({len(got)} vs {len(kmodes)})')
    # The kernel's preferred mode first, flagged preferred; without one
    # (a disconnected connector has no modes, a head forced on with video=
    # or qxl's may have none preferred), the kernel's order and none flagged.
    pref = [(m['hdisplay'], m['vdisplay'], m['clock']) for m in k['modes']
            if m['type'] & 8 and not m['flags'] & 0x30]
    if pref:
        check(bool(c['modes']) and c['modes'][0][3] and got[0] == pref[0],
              f'{c["name"]}: the kernel\'s preferred mode first')
    else:
        check(got == kmodes and not any(m[3] for m in c['modes']),
              f'{c["name"]}: no preferred mode: the kernel\'s order, none flagged')
check(ours['writeback'] == any(c['type'] == 18 for c in theirs['connectors']), 'writeback')
caps = theirs['driver']['caps']
check(ours['cursor'] == [caps['CURSOR_WIDTH'], caps['CURSOR_HEIGHT']], 'cursor size')
print(f'compared {len(ours["crtcs"])} crtcs, {len(ours["planes"])} planes, '
      f'{len(ours["connectors"])} connectors, '
      f'{sum(len(c["modes"]) for c in ours["connectors"])} modes')
for e in errors:
    print('MISMATCH:', e)
sys.exit(1 if errors else 0)
PY
echo "PASS"
