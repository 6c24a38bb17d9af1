#!/usr/bin/env bash
# Regenerates data/kjv_genesis_exodus.txt, ptk's default training text: Genesis 1:1 to Exodus 40:38 of the
# King James Version, as printed by the `bible` program (Debian package bible-kjv) from the text in
# Debian package bible-kjv-text (/usr/lib/bible.data). See data/README.md for the source and licence.
#
#   scripts/make_data.sh [OUT]        (default OUT: data/kjv_genesis_exodus.txt)
set -euo pipefail
out=${1:-$(dirname "$0")/../data/kjv_genesis_exodus.txt}
if ! command -v bible >/dev/null || [ ! -e /usr/lib/bible.data ]; then
  if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
  "${sudo[@]}" apt-get install -y bible-kjv bible-kjv-text
fi
# Line width 80 (bible wraps at $COLUMNS, 80 when unset): fixed so the bytes do not depend on the terminal.
COLUMNS=80 bible -p /usr/lib gen1:1-exo40:38 > "$out.partial"
mv "$out.partial" "$out"
echo "wrote $out ($(wc -c < "$out") bytes, sha256 $(sha256sum "$out" | cut -d' ' -f1))"
